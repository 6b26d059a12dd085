#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirRuntime

extension EngineRun {
    /// Runs it here; or, while another flowdir (a watcher) holds the
    /// instance, hands it the request and reports what it did (`nil`).
    static func runOrHandOver(_ ctx: Context, path: String, request: PersonRequest, retry: [String] = [], rerun: [String] = [],
                              downstream: Bool = false, wait: Double = 15) async throws -> RunOutcome? {
        var posted = false
        let deadline = ctx.clock.instant + .milliseconds(Int(wait * 1000))
        while true {
            do {
                if posted { RequestBox.withdraw(request.id, in: path) }
                return try await run(ctx, path: path, retry: retry, retryFrom: request.run, rerun: rerun, downstream: downstream)
            } catch is InstanceLock.Busy {
                if posted, let result = RequestBox.takeResult(request.id, in: path) {
                    try PersonRequests.report(result)
                    return nil
                }
                guard ctx.clock.instant < deadline else {
                    RequestBox.withdraw(request.id, in: path)
                    throw CommandError("\(path) is held by another flowdir that did not take the request within \(Int(wait))s",
                                       hint: "`flowdir status` shows which", exitCode: 75)
                }
                if !posted {
                    try RequestBox.post(request, to: path)
                    posted = true
                }
                // The holder takes it within moments; its result ends the wait.
                for _ in 0..<20 {
                    if let result = RequestBox.takeResult(request.id, in: path) {
                        try PersonRequests.report(result)
                        return nil
                    }
                    try await ctx.clock.sleep(for: .milliseconds(50))
                }
            }
        }
    }
}

/// `flowdir retry <instance> <node>`: the same inputs and params again.
struct RetryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Run a node again with the frozen inputs (blob ids) and params of its last run.",
        discussion: "With --run N, those of run N (runs/N/run.yaml). Refuses before starting if a frozen input is no longer in the repository. Then advances the instance like `flowdir run`."
    )

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String

    @Argument(help: "The node to retry.")
    var node: String

    @Option(help: ArgumentHelp("Retry from this run's inputs and params (default: the last run that started).", valueName: "n"))
    var run: Int?

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() async throws {
        let ctx = try Context.load()
        let path = try ctx.resolve(instance, root: root)
        guard run.map({ $0 >= 1 }) ?? true else { throw ValidationError("--run takes a run number, 1 or more") }
        var request = PersonRequest(verb: .retry, node: node, by: PersonRequests.person(path))
        request.run = run
        guard let outcome = try await EngineRun.runOrHandOver(ctx, path: path, request: request, retry: [node]) else { return }
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
        var request = PersonRequest(verb: .rerun, node: node, by: PersonRequests.person(path))
        request.downstream = downstream
        guard let outcome = try await EngineRun.runOrHandOver(ctx, path: path, request: request, rerun: [node],
                                                              downstream: downstream) else { return }
        throw ExitCode(outcome.exitCode)
    }
}
