"""Package marker: lets the installed package ship these files."""
