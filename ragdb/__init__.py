"""ragdb."""
