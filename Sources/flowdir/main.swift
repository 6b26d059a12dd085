import FlowdirCommands

await Flowdir.runMain()
