// MathJax set up for pymdownx.arithmatex (generic mode), as mkdocs-material documents it.
window.MathJax = {
  tex: { inlineMath: [["\\(", "\\)"]], displayMath: [["\\[", "\\]"]], processEscapes: true, processEnvironments: true },
  options: { ignoreHtmlClass: ".*|", processHtmlClass: "arithmatex" },
};
document$.subscribe(() => { MathJax.typesetPromise(); });
