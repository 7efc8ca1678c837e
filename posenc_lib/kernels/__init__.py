"""Speed machinery: the same arithmetic as the readable encodings, arranged to be fast (tested against them)."""
