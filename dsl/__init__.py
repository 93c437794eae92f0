"""Front end: .part text -> parse tree (Lark) -> typed IR; the Python builder; the printer."""
