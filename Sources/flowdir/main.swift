import FlowdirCommands
import FlowdirIO
import FlowdirRuntime

// flowdir's only children are its jobs, seen through pidfds (see ChildWatch).
ChildWatch.dropsChildSignals = true
// It exits after one run: what a run holds is left for the exit to free.
Engine.keepsRunsUntilExit = true
await Flowdir.runMain()
