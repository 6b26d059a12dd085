import FlowdirCore
import FlowdirIO
import FlowdirTemplates
import FlowdirTestSupport
import Foundation
import Testing

@Suite(.tags(.medium)) struct MigrationTests {
    static let fixture = RepositoryPaths.root + "/Tests/FlowdirIOTests/Fixtures/instance-v0"

    /// The v0 fixture, committed as it would have been, in a fresh repository.
    func makeV0Instance() throws -> (TemporaryDirectory, String) {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/old"
        let store = try InstanceStore.create(at: path)
        var changes: [InstanceStore.Change] = []
        let files = ["instance.yaml", "workflow.yaml", "nodes/load/state.yaml", "nodes/load/params.yaml",
                     "nodes/paint/state.yaml", "nodes/paint/params.yaml"]
        for f in files { changes.append(.write(f, try String(contentsOfFile: Self.fixture + "/" + f, encoding: .utf8))) }
        try store.commit(changes, message: CommitMessage(summary: "Create (schema 0)", event: "create"))
        try store.close()
        return (dir, path)
    }

    @Test func aVersionZeroInstanceIsMigratedAndCommittedOnOpen() throws {
        let (dir, path) = try makeV0Instance()
        _ = dir
        // Reading alone migrates in memory and writes nothing.
        let peek = try InstanceReader().read(path)
        #expect(peek.migration?.from == 0)
        #expect(peek.record.title == "Old photo job")
        #expect(try GitCLI.run(["rev-list", "--count", "HEAD"], in: path) == "1\n")

        let open = try OpenInstance.open(path, purpose: "test")
        try open.close()
        let s = open.snapshot
        #expect(s.migration == nil)
        #expect(s.record == InstanceRecord(id: "0b5c9a52-2f6e-4a44-9a57-6b8e1c1f3d10", title: "Old photo job",
                                           template: "workflows/old.yaml",
                                           createdAt: Timestamp(iso8601: "2026-10-01T08:30:00Z")!,
                                           schemaVersion: 1, archived: false, polling: .paused))
        #expect(s.states["load"]?.state == .succeeded)
        #expect(s.states["load"]?.run == 1)
        #expect(s.states["paint"]?.state == .failed(NodeError(summary: "Painter crashed (exit 139)", code: "unknown")))
        #expect(s.states["paint"]?.run == 2)
        #expect(try GitCLI.run(["log", "-1", "--format=%s"], in: path) == "Migrate instance from schema 0 to 1\n")
        #expect(try GitCLI.run(["show", "HEAD:instance.yaml"], in: path).contains("schemaVersion: 1\n"))
        #expect(try GitCLI.run(["show", "HEAD:nodes/paint/state.yaml"], in: path).contains("state: failed\nreason: Painter crashed (exit 139)\n"))
        try GitCLI.expectHealthy(path)
        // Opening again changes nothing.
        try OpenInstance.open(path, purpose: "test").close()
        #expect(try GitCLI.run(["rev-list", "--count", "HEAD"], in: path) == "2\n")
    }

    @Test func aNewerSchemaIsRefusedWithAClearError() throws {
        let (dir, path) = try makeV0Instance()
        _ = dir
        try "id: x\ntitle: From the future\ncreatedAt: 2026-11-22T00:00:00Z\nschemaVersion: 7\n"
            .write(toFile: path + "/instance.yaml", atomically: true, encoding: .utf8)
        #expect {
            try InstanceReader().read(path)
        } throws: { error in
            "\(error)" == "\(path) was written by a newer flowdir (schemaVersion 7; this one reads up to 1); upgrade flowdir to open it"
        }
    }

    @Test func theMigrationIsPure() {
        let docs = InstanceMigration.Documents(
            instance: [ParamEntry(key: "uuid", value: .string("u")), ParamEntry(key: "name", value: .string("n")),
                       ParamEntry(key: "created", value: .string("2026-01-01T00:00:00Z"))],
            states: ["a": [ParamEntry(key: "state", value: .string("waiting"))]])
        guard case .migrated(0, let out) = InstanceMigration.migrate(docs) else {
            Issue.record("expected a migration")
            return
        }
        #expect(out.instance.map(\.key) == ["id", "title", "createdAt", "archived", "polling", "schemaVersion"])
        #expect(out.states["a"]?[key: "state"]?.value == .string("awaitingUser"))
        #expect(InstanceMigration.migrate(out) == .current)
    }
}
