import ArgumentParser
import FlowdirCore
import FlowdirIO

/// `flowdir skip <await>`.
struct SkipCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "skip",
        abstract: "Skip a question, when it allows it: the node is skipped; consumers on optional ports go on."
    )

    @Argument(help: "The question: <instance>/<node>, an await id, or a flowdir:// link.")
    var target: String

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() async throws {
        try await PersonRequests.ask(.skip, about: target, root: root)
    }
}

/// `flowdir claim <await>`.
struct ClaimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "claim",
        abstract: "Take a question for five minutes, so no one else answers it meanwhile; the claim lapses by itself."
    )

    @Argument(help: "The question: <instance>/<node>, an await id, or a flowdir:// link.")
    var target: String

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    @Flag(help: "Give up your claim instead (anyone may answer it again).")
    var release = false

    func run() async throws {
        try await PersonRequests.ask(release ? .release : .claim, about: target, root: root)
    }
}
