"""The staff dashboard: server-rendered pages over one workspace at a time, actions that call services."""
