import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirRuntime

/// `flowdir retry <instance> <node>`: the same inputs and params again.
struct RetryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Run a node again with the frozen inputs (blob ids) and params of its last run.",
        discussion: "Refuses before starting if a frozen input is no longer in the repository. Then advances the instance like `flowdir run`."
    )

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String

    @Argument(help: "The node to retry.")
    var node: String

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() async throws {
        let ctx = try Context.load()
        let path = try ctx.resolve(instance, root: root)
        let outcome = try await EngineRun.run(ctx, path: path, retry: [node])
        throw ExitCode(outcome.exitCode)
    }
}

/// `flowdir rerun <instance> <node> [--downstream]`: with what is there now.
struct RerunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rerun",
        abstract: "Run a node again with the current edges, newest upstream outputs and current params.",
        discussion: "With --downstream, every node downstream of it runs again after it. Then advances the instance like `flowdir run`."
    )

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String

    @Argument(help: "The node to rerun.")
    var node: String

    @Flag(help: "Also rerun everything downstream of the node.")
    var downstream = false

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() async throws {
        let ctx = try Context.load()
        let path = try ctx.resolve(instance, root: root)
        let outcome = try await EngineRun.run(ctx, path: path, rerun: [node], downstream: downstream)
        throw ExitCode(outcome.exitCode)
    }
}
