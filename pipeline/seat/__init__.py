"""A person takes a seat: `python -m pipeline seat BENCHMARK --as NAME` plays one game of a benchmark in
the seat of a `bot: human` roster entry, from a local web page (server, page) or the terminal
(terminal), and records it as the benchmark records its games (game). docs/human-seat.md."""
