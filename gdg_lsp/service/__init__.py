"""The completion service: (document, position, settings) -> suggestion, over a local or remote model."""
