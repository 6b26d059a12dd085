import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirTemplates
import Foundation

/// `flowdir cancel <instance> <node>`: the only way to stop a job.
struct CancelCommand: ParsableCommand {
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

    func run() throws {
        let ctx = try Context.load()
        let path = try ctx.resolve(instance, root: root)
        let snapshot = try ctx.reader.read(path)
        guard snapshot.states[node] != nil else {
            throw CommandError("\(path) has no node '\(node)'", hint: Suggest.hint(for: node, in: snapshot.graph?.order ?? []))
        }
        if let open = try? OpenInstance.open(path, purpose: "cancel", reader: ctx.reader, clock: ctx.clock, lockTimeout: 0) {
            // Nobody is running it: cancel here and now.
            defer { try? open.close() }
            guard let record = open.snapshot.states[node] else { return }
            switch record.state {
            case .succeeded, .failed, .cancelled, .skipped:
                Output.line("'\(node)' is \(record.state.name); nothing to cancel.")
                return
            default:
                break
            }
            var next = record
            next.state = .cancelled(reason: "Cancelled by \(Host.user)")
            next.updatedAt = ctx.clock.now()
            try open.commit([.write(InstancePaths.state(node), InstanceCodec.encode(next))],
                            message: CommitMessage(summary: "\(node) → cancelled", event: "cancel",
                                                   transitions: [Transition(node: node, from: record.state.name, to: "cancelled", run: record.run)]),
                            author: open.store.personSignature())
            Output.line("Cancelled '\(node)'.")
            return
        }
        // A flowdir is at work on it: hand the request over, and wait to see it done.
        let dir = Path.join(path, InstancePaths.local + "/requests")
        try Files.writeAtomically(Path.join(dir, RandomID.uuid() + ".cancel"), node + "\n")
        let deadline = Date().addingTimeInterval(wait)
        while Date() < deadline {
            if let state = (try? ctx.reader.read(path))?.states[node]?.state, !state.isActive, state != .ready, state != .awaitingUser {
                Output.line("'\(node)' is now \(state.name)" + (state.reason.map { ": \($0)" } ?? "") + ".")
                return
            }
            usleep(100_000)
        }
        throw CommandError("asked the running flowdir to cancel '\(node)', but it has not done so within \(Int(wait))s",
                           hint: "`flowdir status` shows which flowdir holds \(path)")
    }
}
