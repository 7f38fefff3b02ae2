"""The analyst: state, nodes, tools, the offline reasoner, application service and CLI."""
