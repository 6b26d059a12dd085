import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import FlowdirTestSupport
import Foundation
import Testing

@Suite(.tags(.medium)) struct EngineTests {
    @Test func chainDiamondAndParallelBranchesSucceed() async throws {
        let chain = try Flow(nodes: [("a", "{ text: A }"), ("b", "{ text: B }"), ("c", "{ text: C }")],
                             edges: ["a.out -> b.a", "b.out -> c.a"])
        var outcome = try await chain.run()
        #expect(outcome.exitCode == 0)
        #expect(try chain.output("c") == "CBA")
        try GitCLI.expectHealthy(chain.instance)

        let diamond = try Flow(nodes: [("top", "{ text: T }"), ("l", "{ text: L }"), ("r", "{ text: R }"), ("join", "{ text: J }")],
                               edges: ["top.out -> l.a", "top.out -> r.a", "l.out -> join.a", "r.out -> join.b"])
        outcome = try await diamond.run()
        #expect(outcome.states.values.allSatisfy { $0 == .succeeded })
        #expect(try diamond.output("join") == "JLTRT")
        // Provenance: each input is recorded with the blob of the exact bytes used.
        let record = try diamond.runRecord("join", 1)
        #expect(record.inputs.map(\.port) == ["a", "b"])
        #expect(record.inputs[0].blob == GitRepository.blobID(of: Array("LT".utf8)).hex)
        #expect(record.outputs.first?.blob == GitRepository.blobID(of: Array("JLTRT".utf8)).hex)
        // And git holds the output under that id (stored with the id the record got, not hashed twice).
        let outFile = try #require(record.outputs.first?.file)
        #expect(try GitCLI.run(["rev-parse", "HEAD:nodes/join/" + outFile], in: diamond.instance)
            .trimmingCharacters(in: .whitespacesAndNewlines) == record.outputs.first?.blob)
        #expect(record.trigger == .auto)
        #expect(record.exitCode == 0)
        try GitCLI.expectHealthy(diamond.instance)

        let parallel = try Flow(nodes: (1...4).map { ("p\($0)", "{ text: P\($0), sleep: 0.1, together: 4, log: LOG }") }, edges: [],
                                options: "{ concurrency: { local: 4 } }")
        outcome = try await parallel.run(local: 4)
        #expect(outcome.exitCode == 0)
        #expect(try parallel.maxConcurrency() == 4)  // independent branches really run at once
    }

    @Test func theLocalCapIsNeverExceeded() async throws {
        let flow = try Flow(nodes: (1...6).map { ("n\($0)", "{ sleep: 0.8, log: LOG }") }, edges: [],
                            options: "{ concurrency: { local: 2 } }")
        let outcome = try await flow.run(local: 8)
        #expect(outcome.exitCode == 0)
        #expect(try flow.intervals().count == 6)
        let seen = try flow.maxConcurrency()
        let intervals = try flow.intervals()
        #expect(seen <= 2, "the cap is 2; \(seen) ran at once: \(intervals)")
        #expect(seen == 2, "branches should overlap: \(intervals)")
        // And the machine-wide cap holds over the instance's.
        let tight = try Flow(nodes: (1...4).map { ("n\($0)", "{ sleep: 0.2, log: LOG }") }, edges: [],
                             options: "{ concurrency: { local: 4 } }")
        _ = try await tight.run(local: 1)
        #expect(try tight.maxConcurrency() == 1)
    }

    @Test func instancesTakeTurns() async throws {
        // One slot for the machine; B was touched last, so it starts, then they alternate.
        let a = try Flow(nodes: (1...3).map { ("a\($0)", "{ sleep: 0.05, log: LOG }") }, edges: [], name: "A")
        // Made two seconds later by its clock (commit times are in whole seconds).
        let later = FlowdirClock.system.pinned(at: FlowdirClock.system.now() + 2)
        let b = try Flow(nodes: (1...3).map { ("b\($0)", "{ sleep: 0.05, log: \(a.log) }") }, edges: [], name: "B", clock: later)
        let outcomes = try await a.engine(local: 1).runAll([a.instance, b.instance])
        #expect(outcomes.values.allSatisfy { $0.exitCode == 0 }, "\(outcomes.mapValues(\.states))")
        let intervals = try a.intervals()
        #expect(intervals.sorted { $0.1 < $1.1 }.map(\.0) == ["b1", "a1", "b2", "a2", "b3", "a3"], "\(intervals)")
    }

    @Test func failFastCancelsWhatRuns() async throws {
        let flow = try Flow(nodes: [("top", "{}"), ("bad", "{ sleep: 0.3, fail: true }"), ("slow", "{ sleep: 60, child: true, log: LOG }"),
                                    ("join", "{}")],
                            edges: ["top.out -> bad.a", "top.out -> slow.a", "bad.out -> join.a", "slow.out -> join.b"],
                            options: "{ errorPolicy: fail-fast }")
        let outcome = try await flow.engine(grace: 1).run(flow.instance)
        // Cut short, not run out: the slow branch started and never reached
        // the end of its minute. (Not timed: beside a release build, this run
        // once took 29.6 s though the branch was cancelled, along with many
        // other tests of the process held up as long.)
        let log = try String(contentsOfFile: flow.log, encoding: .utf8)
        #expect(log.contains("start slow ") && !log.contains("end slow "), "\(log)")
        #expect(outcome.exitCode == 1)
        guard case .failed(let err) = outcome.states["bad"] else { Issue.record("bad should fail"); return }
        #expect(err.summary == "exited with code 3: boom: failing on purpose")
        #expect(err.code == "exit(3)")
        #expect(outcome.states["slow"] == .cancelled(reason: "Cancelled: 'bad' failed (fail-fast)"))
        #expect(outcome.states["join"] == .blocked(.upstreamFailed(node: "bad")))
        try GitCLI.expectHealthy(flow.instance)
    }

    /// An output written under another extension is found and moved in; none
    /// at all, or a folder in its place, fails the node and says why.
    @Test func outputsAreFoundOrTheNodeSaysWhatIsWrong() async throws {
        let (dir, instance) = try Self.instance(of: "Odd", script: #"case "$0" in renamed) printf hi > "$(dirname "$1")/out.md";; folder) mkdir "$1";; esac"#,
                                                modes: ["renamed", "none", "folder"], options: "{ errorPolicy: isolate-node }")
        defer { withExtendedLifetime(dir) {} }
        let outcome = try await Engine().run(instance)
        #expect(outcome.states["renamed"] == .succeeded)
        #expect(try String(contentsOfFile: instance + "/nodes/renamed/out/out.txt", encoding: .utf8) == "hi")
        guard case .failed(let none) = outcome.states["none"], case .failed(let folder) = outcome.states["folder"] else {
            Issue.record("\(outcome.states)"); return
        }
        #expect(none.summary == "the tool did not write its output 'out'" && none.code == "missingOutput")
        #expect(folder.summary.hasPrefix("output 'out' cannot be read: ") && folder.summary.hasSuffix("out.txt: not a regular file"), "\(folder.summary)")
        try GitCLI.expectHealthy(instance)
    }

    /// A first run's work folder becomes `out/` only when it holds the
    /// outputs and nothing else: a tool's scratch file stays out of `out/`,
    /// a file a person left in `out/` is kept beside the new output, and no
    /// work folder outlives its run either way.
    @Test func onlyTheOutputsGoIntoOut() async throws {
        let (dir, instance) = try Self.instance(of: "Scratch", script: #"printf "$0" > "$1"; [ "$0" = scratch ] && printf x > scratch.tmp; exit 0"#,
                                                modes: ["clean", "scratch", "occupied"])
        defer { withExtendedLifetime(dir) {} }
        try dir.write("inst/nodes/occupied/out/note.txt", "mine")
        let outcome = try await Engine().run(instance)
        #expect(outcome.exitCode == 0, "\(outcome.states)")
        let fs = LocalFileSystem()
        for id in ["clean", "scratch"] {
            #expect(try fs.listDirectory(instance + "/nodes/\(id)/out") == ["out.txt"])
            #expect(try String(contentsOfFile: instance + "/nodes/\(id)/out/out.txt", encoding: .utf8) == id)
        }
        #expect(try fs.listDirectory(instance + "/nodes/occupied/out") == ["note.txt", "out.txt"])
        #expect(try String(contentsOfFile: instance + "/nodes/occupied/out/note.txt", encoding: .utf8) == "mine")
        #expect(try fs.listDirectory(instance + "/.flowdir/work") == [])
        #expect(try GitCLI.run(["status", "--porcelain"], in: instance) == "?? nodes/occupied/out/note.txt\n")
        try Files.remove(instance + "/nodes/occupied/out/note.txt")
        try GitCLI.expectHealthy(instance)
    }

    /// An instance of a workflow of one tool, `kind`, a node per mode (named
    /// for it): the tool runs `script` (`sh -c`) with the node's `mode` as
    /// `$0` and the path of its one output, a TextRef, as `$1`.
    static func instance(of kind: String, script: String, modes: [String], options: String = "") throws -> (TemporaryDirectory, String) {
        let dir = try TemporaryDirectory()
        try dir.write("wf/tools/\(kind).yaml", """
            kind: \(kind)
            outputs: { out: TextRef }
            params: { mode: { type: string } }
            run:
              command: [sh, -c, '\(script)', "{params.mode}", "{outputs.out}"]
            """)
        let nodes = modes.map { "  - { id: \($0), kind: \(kind), params: { mode: \($0) } }\n" }.joined()
        try dir.write("wf/t.yaml", "schema: app.workflow/v2\nname: \(kind.lowercased())\nnodes:\n\(nodes)" + (options.isEmpty ? "" : "options: \(options)\n"))
        let loaded = TemplateLoader(fileSystem: LocalFileSystem()).load(path: dir.path + "/wf/t.yaml")
        let instance = dir.path + "/inst"
        try InstanceCreator().create(template: loaded, templatePath: dir.path + "/wf/t.yaml", directory: instance, title: kind.lowercased(), overrides: [])
        return (dir, instance)
    }

    @Test func isolateNodeLetsOtherBranchesFinish() async throws {
        let flow = try Flow(nodes: [("top", "{}"), ("bad", "{ fail: true }"), ("after", "{}"), ("good", "{ sleep: 0.3 }"), ("good2", "{}")],
                            edges: ["top.out -> bad.a", "bad.out -> after.a", "top.out -> good.a", "good.out -> good2.a"],
                            options: "{ errorPolicy: isolate-node }")
        let outcome = try await flow.run()
        #expect(outcome.exitCode == 1)
        #expect(outcome.states["good2"] == .succeeded)
        #expect(outcome.states["after"] == .blocked(.upstreamFailed(node: "bad")))
        let show = try flow.snapshot().states["after"]?.state.reason
        #expect(show == "Upstream failed: 'bad'")
    }

    @Test(arguments: ["$(touch /tmp/flowdir-pwned)", "; rm -rf ~", "`id`", "a b", "--help", "'quoted'", "{inputs.a}"])
    func paramsReachToolsAsLiteralArguments(_ value: String) async throws {
        try? FileManager.default.removeItem(atPath: "/tmp/flowdir-pwned")
        let flow = try Flow(nodes: [("n", "{ text: x }")], edges: [])
        try flow.setParams("n", "text: \(YAMLWriterQuote.quote(value))\n")
        let outcome = try await flow.run()
        #expect(outcome.exitCode == 0)
        #expect(try flow.output("n") == value)
        #expect(!FileManager.default.fileExists(atPath: "/tmp/flowdir-pwned"))
    }
}

import FlowdirTemplates
enum YAMLWriterQuote {
    static func quote(_ s: String) -> String { YAMLWriter.scalar(s) }
}
