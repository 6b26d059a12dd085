#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import FlowdirTemplates

/// `flowdir cancel <instance> <node>`: the only way to stop a job.
struct CancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel a node: its process group gets SIGTERM, then SIGKILL after a grace period.",
        discussion: "Works whether or not a `flowdir run` is going: if one is, the request is handed to it."
    )

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String

    @Argument(help: "The node to cancel.")
    var node: String

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    @Option(help: "Seconds to wait for a running flowdir to carry it out.")
    var wait: Double = 15

    func validate() throws { try SecondsOption.check(wait, "--wait") }

    func run() async throws {
        let ctx = try Context.load()
        let path = try ctx.resolve(instance, root: root)
        let snapshot = try ctx.reader.read(path)
        guard snapshot.states[node] != nil else {
            throw CommandError("\(path) has no node '\(node)'", hint: Suggest.hint(for: node, in: snapshot.graph?.order ?? []))
        }
        switch snapshot.states[node]?.state {
        case .succeeded?, .failed?, .cancelled?, .skipped?:
            Output.line("'\(node)' is \(snapshot.states[node]!.state.name); nothing to cancel.")
            return
        default:
            break
        }
        // Handed over as a request: to the flowdir at work on it, or, when
        // none is, carried out here. Then the job's end is waited for.
        let request = PersonRequest(verb: .cancel, node: node, by: PersonRequests.person(path))
        let result = try await PersonRequests.send(request, to: path, ctx: ctx, wait: wait)
        guard result.ok else { throw CommandError(result.message) }
        let deadline = ctx.clock.instant + .milliseconds(Int(wait * 1000))
        while ctx.clock.instant < deadline {
            if let state = (try? ctx.reader.read(path))?.states[node]?.state, !state.isActive, state != .ready, state != .awaitingUser {
                Output.line("'\(node)' is now \(state.name)" + (state.reason.map { ": \($0)" } ?? "") + ".")
                return
            }
            try await ctx.clock.sleep(for: .milliseconds(100))
        }
        throw CommandError("asked the running flowdir to cancel '\(node)', but it has not done so within \(Int(wait))s",
                           hint: "`flowdir status` shows which flowdir holds \(path)")
    }
}
