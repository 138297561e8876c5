"""What a user touches: the command line, text summaries, plots and the generated reference docs."""
