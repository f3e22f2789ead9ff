"""Command-line interface: one module per subcommand, each thin (parse -> library -> render)."""
