import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// Files flowdir writes, edited by hand: a node's state typed in, an output
/// deleted, a node's folder removed. They are flowdir's record of what
/// happened, so they are put back as the last commit has them (with a
/// warning), never trusted or committed as a person's edit.
extension RunCommandTests {
    @Test func handEditsOfFlowdirsFilesArePutBack() async throws {
        try await offPool { try self.handEdits() }
    }

    func handEdits() throws {
        let dir = try TemporaryDirectory()
        let inst = try makeInstance(dir)
        // A state typed into a node that never ran.
        try dir.write("inst/nodes/end/state.yaml", "state: succeeded\nrun: 1\n")
        let first = try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: env)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("put back nodes/end/state.yaml"), "\(first.stderr)")
        #expect(try GitCLI.run(["show", "HEAD:nodes/end/runs/1/run.yaml"], in: inst).contains("node: end"), "it really ran")
        #expect(try String(contentsOfFile: inst + "/nodes/end/out/out.txt", encoding: .utf8) == "ENLROMR")
        try GitCLI.expectHealthy(inst)

        // An output deleted by hand, and a node's folder removed: back as committed, nothing run again.
        let commits = try GitCLI.run(["rev-list", "--count", "HEAD"], in: inst)
        try FileManager.default.removeItem(atPath: inst + "/nodes/l1/out/out.txt")
        try FileManager.default.removeItem(atPath: inst + "/nodes/r2")
        let second = try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: env)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stderr.contains("nodes/l1/out/out.txt") && second.stderr.contains("nodes/r2/state.yaml"), "\(second.stderr)")
        #expect(try String(contentsOfFile: inst + "/nodes/l1/out/out.txt", encoding: .utf8) == "LR")
        #expect(InstanceProbe.state(inst, "r2") == "succeeded")
        #expect(try GitCLI.run(["rev-list", "--count", "HEAD"], in: inst) == commits, "no commit: nothing changed")
        try GitCLI.expectHealthy(inst)

        // A state.yaml made unreadable is put back too, instead of stopping every command.
        try dir.write("inst/nodes/root/state.yaml", "\u{0}\u{1}not yaml: [")
        let third = try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: env)
        #expect(third.status == 0, "\(third.stderr)")
        try GitCLI.expectHealthy(inst)
    }
}

extension WatchCommandTests {
    /// `rm -rf nodes/<id>` under a running watcher: the node's files come
    /// back as committed; nothing is committed as a person's edit.
    @Test func aNodeFolderRemovedUnderTheWatcherComesBack() async throws {
        try await offPool { try self.removedNodeFolder() }
    }

    func removedNodeFolder() throws {
        let w = try Watching(template: "schema: app.workflow/v2\nname: Two\nnodes:\n  - { id: a, kind: Echo }\n  - { id: b, kind: Echo, inputs: { a: TextRef } }\nedges:\n  - a.out -> b.a\n")
        try w.start()
        #expect(try w.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
        try w.waitFor("both steps") { w.state("b") == "succeeded" }
        try w.quiet()
        let head = try GitCLI.run(["rev-parse", "HEAD"], in: w.inst())
        _ = try CommandRunner.run("/bin/rm", ["-rf", w.inst() + "/nodes/a"])
        try w.waitFor("the node's files to come back") {
            FileManager.default.fileExists(atPath: w.inst() + "/nodes/a/out/out.txt") && w.state("a") == "succeeded"
        }
        try w.quiet()
        w.stop()
        #expect(try GitCLI.run(["rev-parse", "HEAD"], in: w.inst()) == head, "nothing committed")
        #expect(w.logText().contains("put back"))
        try GitCLI.expectHealthy(w.inst())
    }
}

extension RunCommandTests {
    /// An instance's own file made unreadable, or left with a merge's
    /// conflict markers: the error names the file and says how to get it
    /// back or finish the merge, not what a template needs.
    @Test func anInstanceFileSaysHowToGetItBack() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            let inst = try self.makeInstance(dir)
            let good = try Data(contentsOf: URL(fileURLWithPath: inst + "/instance.yaml"))
            for (bytes, says) in [(Data(), "the file is empty"), (Data([0, 1, 2]), "not a text file"),
                                  (Data("<<<<<<< HEAD\ntitle: a\n=======\ntitle: b\n>>>>>>> theirs\n".utf8), "conflict markers")] {
                try bytes.write(to: URL(fileURLWithPath: inst + "/instance.yaml"))
                for command in [["show", "inst"], ["run", "inst"]] {
                    let r = try CommandRunner.flowdir(command, in: dir.path, environment: self.env)
                    #expect(r.status != 0)
                    #expect(r.stderr.contains(says), "\(command): \(r.stderr)")
                    #expect(r.stderr.contains("checkout -- instance.yaml` puts back the version last committed"), "\(r.stderr)")
                    #expect(!r.stderr.contains("template"), "\(r.stderr)")
                }
            }
            try good.write(to: URL(fileURLWithPath: inst + "/instance.yaml"))
            try GitCLI.expectHealthy(inst)
        }
    }
}
