import FlowdirCommands
import FlowdirIO

// flowdir's only children are its jobs, seen through pidfds (see ChildWatch).
ChildWatch.dropsChildSignals = true
GitLibrary.warmUp()
await Flowdir.runMain()
