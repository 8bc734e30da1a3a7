"""What happened in a thread, to look at: the trace data, its HTML page and its SVG (issue 18)."""
