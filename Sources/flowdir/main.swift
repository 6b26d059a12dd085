import FlowdirCommands

Flowdir.main()
