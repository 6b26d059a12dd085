import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirRuntime

/// `flowdir polling pause|resume <instance>`: status checks of an
/// instance's remote jobs stop or start again; the jobs go on running.
struct PollingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "polling",
        abstract: "Pause or resume status checks of an instance's remote jobs (they go on running).",
        discussion: """
            `pause` stops every status request about the instance's jobs (instance.yaml: polling: paused); \
            the jobs go on where they run, and `resume` picks up what they came to. There is no pause of a job itself: \
            `flowdir cancel` is the only way to stop one.
            """
    )

    enum Action: String, ExpressibleByArgument, CaseIterable {
        case pause, resume
    }

    @Argument(help: "pause or resume.")
    var action: Action

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    @Option(help: "Seconds to wait for a running flowdir to carry it out.")
    var wait: Double = 15

    func validate() throws { try SecondsOption.check(wait, "--wait") }

    func run() async throws {
        let ctx = try Context.load()
        let path = try ctx.resolve(instance, root: root)
        let request = PersonRequest(verb: action == .pause ? .pausePolling : .resumePolling, node: "", by: PersonRequests.person(path))
        try PersonRequests.report(try await PersonRequests.send(request, to: path, ctx: ctx, wait: wait))
    }
}
