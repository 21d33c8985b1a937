"""Every write and every multi-model rule lives here, in functions named `<entity>_<verb>`."""
