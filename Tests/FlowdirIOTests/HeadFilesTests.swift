import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// Opening an instance walks HEAD's `nodes/` once (`OpenInstance.HeadFiles`)
/// where it looked each file up by path: the walk must find what the
/// lookups found, and a walk of an older HEAD must never be trusted.
@Suite(.tags(.medium)) struct HeadFilesTests {
    let message = CommitMessage(summary: "test", event: "test")

    private func sample() throws -> (TemporaryDirectory, InstanceStore) {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        let files: [(String, String)] = [
            ("instance.yaml", "id: x\n"), ("workflow.yaml", "nodes: []\n"), ("tools/T.yaml", "kind: T\n"),
            ("nodes/a/params.yaml", "size: 3\n"), ("nodes/a/state.yaml", "state: succeeded\n"),
            ("nodes/a/out/image.png", "png"), ("nodes/a/out/mask.png", "mask"), ("nodes/a/runs/1/run.yaml", "run: 1\n"),
            ("nodes/b/params.yaml", "{}\n"), ("nodes/b/state.yaml", "state: ready\n"),
            ("nodes/c/state.yaml", "state: blocked\n"),  // no params.yaml
            ("nodes/d", "a file where a node folder would be\n"),
            ("nodes/e/out/deeper/x.txt", "x"),  // an out/ holding a folder
        ]
        try store.commit(files.map { .write($0.0, Array($0.1.utf8)) }, message: message)
        return (dir, store)
    }

    @Test func theWalkFindsWhatLookupsByPathFind() throws {
        let (dir, store) = try sample()
        defer { try? store.close(); withExtendedLifetime(dir) {} }
        let repo = store.repository
        let head = try #require(store.head)
        let walked = try #require(try OpenInstance.HeadFiles(store))
        #expect(walked.head == head.id)
        for file in ["instance.yaml", "workflow.yaml"] {
            #expect(walked.top[file] == (try repo.entry(at: file, inTree: head.tree))?.id, "\(file)")
        }
        #expect(walked.top["tools"] == nil, "a folder is no top-level file")
        #expect(Set(walked.nodes.keys) == ["a", "b", "c", "e"], "nodes/d is a file, not a node")
        for node in ["a", "b", "c", "d", "e", "nobody"] {
            let params = try repo.entry(at: InstancePaths.params(node), inTree: head.tree).flatMap { $0.isTree ? nil : $0.id }
            #expect((walked.nodes[node]?.params ?? nil) == params, "\(node)")
            let out = try repo.entry(at: InstancePaths.outputs(node), inTree: head.tree).flatMap { $0.isTree ? $0 : nil }
            let expected = try out.map { try repo.entries(ofTree: $0.id) } ?? []
            #expect(try walked.outputs(of: node, in: repo) == expected, "\(node)")
        }
        #expect(try walked.outputs(of: "a", in: repo).map(\.name) == ["image.png", "mask.png"])
    }

    /// Raw tree entries are libgit2's, field by field (modes included).
    @Test func rawEntriesAreLibgit2s() throws {
        let (dir, store) = try sample()
        defer { try? store.close(); withExtendedLifetime(dir) {} }
        let repo = store.repository
        let head = try #require(store.head)
        var trees = [head.tree]
        while let tree = trees.popLast() {
            let raw = try repo.rawEntries(ofTree: tree)
            #expect(raw == (try repo.entries(ofTree: tree)))
            trees += raw.filter(\.isTree).map(\.id)
        }
    }

    /// An edit committed after the walk moves HEAD: the walk is not used
    /// then, or the file put back as the walk had it would look unedited.
    @Test func aWalkOfAnOlderHeadIsNotTrusted() throws {
        let (dir, store) = try sample()
        defer { try? store.close(); withExtendedLifetime(dir) {} }
        let old = try #require(try OpenInstance.HeadFiles(store))
        try store.commit([.write("nodes/a/params.yaml", Array("size: 4\n".utf8))], message: message)
        // A person puts back the old value, in the working tree only.
        try Files.writeAtomically(store.path + "/nodes/a/params.yaml", "size: 3\n")
        let edited = try OpenInstance.commitPersonEdits(store, inHead: old)
        #expect(edited == ["nodes/a/params.yaml"])
        let tree = try #require(store.head?.tree)
        #expect(try store.repository.blob(at: "nodes/a/params.yaml", inTree: tree) == Array("size: 3\n".utf8))
        // With HEAD's own walk, the same files are no edit.
        #expect(try OpenInstance.commitPersonEdits(store, inHead: try OpenInstance.HeadFiles(store)).isEmpty)
    }
}
