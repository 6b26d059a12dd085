import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// An instance is found from inside it (its `inbox/`, a node's folder), and
/// by id or `flowdir://` link from any folder once flowdir made or watched
/// it: `$XDG_STATE_HOME/flowdir/instances` remembers it.
extension InboxCommandTests {
    @Test func anInstanceIsFoundFromInsideItAndByLinkFromAnywhere() async throws {
        try await offPool { try self.finding() }
    }

    func finding() throws {
        let s = try Setup(template: Self.ask)
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        func run(_ args: [String], in dir: String) throws -> CommandResult {
            try CommandRunner.flowdir(args, in: dir, environment: s.env)
        }
        // From inside: inbox/ and a node's folder.
        for sub in ["inbox", "nodes/pick"] {
            let here = s.inst + "/" + sub
            let show = try run(["show", "."], in: here)
            #expect(show.status == 0, "\(sub): \(show.stderr)")
            #expect(show.stdout.contains("pick"), "\(sub): \(show.stdout)")
            let inbox = try run(["inbox"], in: here)
            #expect(inbox.status == 0 && inbox.stdout.contains("pick"), "\(sub): \(inbox.stdout)\(inbox.stderr)")
        }
        // `new` remembered it.
        let made = try String(contentsOfFile: s.dir.path + "/state/flowdir/instances", encoding: .utf8)
        #expect(made.split(separator: "\n").contains { $0.hasSuffix("\t" + (Files.realPath(s.inst) ?? s.inst)) }, "\(made)")
        // By link, from a folder with no instance under it: a duplicate is remembered when made.
        let dup = try s.flowdir(["duplicate", "inst", "--title", "Copy"])
        #expect(dup.status == 0, "\(dup.stderr)")
        let registry = try String(contentsOfFile: s.dir.path + "/state/flowdir/instances", encoding: .utf8)
        let line = try #require(registry.split(separator: "\n").first { $0.hasSuffix("/copy") }, "\(registry)")
        let id = String(line.split(separator: "\t")[0])
        try GitCLI.run(["-C", s.dir.path + "/copy", "status"], in: s.dir.path)
        #expect(try s.flowdir(["run", "copy"]).status == 2)
        let elsewhere = try TemporaryDirectory()
        let open = try run(["open", "--no-claim", "flowdir://\(id)/node/pick"], in: elsewhere.path)
        #expect(open.status == 0, "\(open.stderr)")
        #expect(open.stdout.contains("pick"), "\(open.stdout)")
        // By id too.
        #expect(try run(["show", id], in: elsewhere.path).stdout.contains("Copy"))
        // A remembered folder that is gone is passed over, with the usual error.
        try FileManager.default.removeItem(atPath: s.dir.path + "/copy")
        let gone = try run(["open", "--no-claim", "flowdir://\(id)/node/pick"], in: elsewhere.path)
        #expect(gone.status != 0 && gone.stderr.contains("no instance with id \(id)"), "\(gone.stderr)")
    }
}
