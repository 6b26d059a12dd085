import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// A person's own commits in an instance the watcher is busy with: flowdir
/// holds git's index lock for one index write at a time, so theirs go
/// through (at the first try, nearly always), carry only their file, and
/// undo nothing of flowdir's; flowdir builds on them.
extension WatchCommandTests {
    @Test func aPersonsCommitsGoThroughWhileTheWatcherRunsAWorkflow() async throws {
        try await offPool { try self.personsCommits(watching: true) }
    }

    /// The same beside `flowdir run`, which commits in the background as jobs end.
    @Test func aPersonsCommitsGoThroughWhileFlowdirRunRunsAWorkflow() async throws {
        try await offPool { try self.personsCommits(watching: false) }
    }

    func personsCommits(watching: Bool) throws {
        let steps = 40, commits = 100
        var nodes = ["  - { id: s1, kind: Echo, params: { text: '1', sleep: 0.05 } }"]
        for i in 2...steps { nodes.append("  - { id: s\(i), kind: Echo, params: { text: '\(i)', sleep: 0.05 }, inputs: { a: TextRef } }") }
        let edges = (2...steps).map { "s\($0 - 1).out -> s\($0).a" }.joined(separator: ", ")
        let w = try Watching(template: "schema: app.workflow/v2\nname: Long\nnodes:\n" + nodes.joined(separator: "\n") + "\nedges: [\(edges)]\n")
        if watching { try w.start() }
        #expect(try w.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
        let inst = w.inst()
        var run: Process?
        if !watching {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
            p.arguments = ["run", inst]
            p.environment = ProcessInfo.processInfo.environment.merging(w.env) { $1 }
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            run = p
        }
        let person = ["-c", "user.name=Ann", "-c", "user.email=ann@example.org"]
        var firstTry = 0
        var rng = SystemRandomNumberGenerator()
        for i in 1...commits {
            usleep(UInt32.random(in: 0...10_000, using: &rng))
            try Data("note \(i)\n".utf8).write(to: URL(fileURLWithPath: inst + "/note\(i).txt"))
            let add = try CommandRunner.run("/usr/bin/git", ["add", "note\(i).txt"], in: inst)
            let commit = add.status == 0 ? try CommandRunner.run("/usr/bin/git", person + ["commit", "-qm", "note \(i)"], in: inst) : add
            if add.status == 0 && commit.status == 0 {
                firstTry += 1
            } else {
                // As a person would: try again once git's lock is free.
                try w.waitFor("note \(i) to go in") {
                    (try? GitCLI.run(["add", "note\(i).txt"], in: inst)) != nil
                        && (try? GitCLI.run(person + ["commit", "-qm", "note \(i)"], in: inst)) != nil
                }
            }
            // Their commit holds their file and nothing else (flowdir's may be on top of it by now).
            let theirs = try GitCLI.run(["log", "-1", "--format=%H", "--grep", "^note \(i)$"], in: inst).trimmingCharacters(in: .newlines)
            #expect(try GitCLI.run(["show", "--name-only", "--format=", theirs], in: inst) == "note\(i).txt\n")
        }
        try w.waitFor("the workflow to finish", timeout: 120) { w.state("s\(steps)") == "succeeded" }
        run?.waitUntilExit()
        #expect(run.map { $0.terminationStatus == 0 } ?? true)
        try w.quiet()
        #expect(firstTry >= 95, "only \(firstTry) of \(commits) went through at the first try")
        // Every note kept, every step's commit kept, and git status clean.
        let log = try GitCLI.run(["log", "--format=%s"], in: inst)
        #expect((1...commits).allSatisfy { log.contains("note \($0)\n") })
        #expect(try GitCLI.run(["status", "--porcelain"], in: inst) == "")
        for i in 1...steps { #expect(w.state("s\(i)") == "succeeded") }
        w.stop()
        // A commit object made while the other side moved the branch (git's
        // or flowdir's, which then builds on the new HEAD) stays dangling, as git's own do.
        try GitCLI.expectHealthy(inst, allowDangling: true)
    }
}
