// The HTTP side of flowdir (DESIGN.md §11): the job server of §12 and the
// webhook receiver the watcher runs.
