import FlowdirCore
@testable import FlowdirTemplates
import FlowdirTestSupport
import Testing

/// run.yaml and state.yaml are written straight out, not through
/// `YAMLWriter`'s walk of entries: the text must be the same, byte for byte.
@Suite(.tags(.small)) struct RecordWriterTests {
    /// Strings a writer must quote, or must not.
    static let words = ["n7", "no", "1.0", "a: b", "it's", "say \"hi\"", "x, [y]", "#c", " pad", "null", "ÿ→", "", "-1", "out/out.bin",
                        "/tmp/a b/c.png", "{outputs.out}", "2026-11-22T10:00:00Z", "line\nbreak"]

    @Test func runRecordsReadAsTheirEntriesDo() {
        var rng = SplitMix(seed: 7)
        func word() -> String { Self.words.randomElement(using: &rng)! }
        let values: [ParamValue] = [.int(3), .double(0.75), .bool(true), .null, .string("soft"), .string("no"),
                                    .array([.int(1), .string("a, b")]), .object([ParamEntry(key: "k", value: .string("v: w"))]),
                                    .array([.object([ParamEntry(key: "id", value: .string("x"))])])]
        for n in 0..<400 {
            var r = RunRecord(run: n, node: word(), kind: word(), trigger: RunTrigger.allCases.randomElement(using: &rng)!,
                              params: (0..<Int.random(in: 0...3, using: &rng)).map { ParamEntry(key: "p\($0)" + (n % 5 == 0 ? " x" : ""),
                                                                                                    value: values.randomElement(using: &rng)!) },
                              inputs: (0..<Int.random(in: 0...3, using: &rng)).map {
                                  InputUse(port: $0 == 2 ? word() : "in\($0)", node: word(), sourcePort: word(), run: $0, blob: word())
                              },
                              outputs: (0..<Int.random(in: 0...2, using: &rng)).map {
                                  OutputRecord(port: "out\($0)", blob: word(), size: $0 * 1000, type: [.file, .image, .mask].randomElement(using: &rng)!,
                                               file: word())
                              },
                              command: (0..<Int.random(in: 0...4, using: &rng)).map { _ in word() },
                              startedAt: Timestamp(seconds: 1_795_000_000 + Double(n)),
                              host: word(), user: word())
            if Bool.random(using: &rng) { r.finishedAt = Timestamp(seconds: 1_795_000_100) }
            if Bool.random(using: &rng) { r.exitCode = Int32.random(in: -2...200, using: &rng) }
            if n % 3 == 0 { r.job = word() }
            if n % 4 == 0 { r.error = NodeError(summary: word(), code: word(), hint: n % 8 == 0 ? word() : nil) }
            if n % 6 == 0 {
                r.answer = AnswerNote(awaitID: word(), files: n % 12 == 0 ? [word(), word()] : [], value: n % 18 == 0 ? values.randomElement(using: &rng) : nil)
            }
            let reference = YAMLWriter.document(RunRecordCodec.entries(r),
                                                comments: ["Run \(r.run) of node '\(r.node)': what it used and what it made. Written by flowdir."])
            #expect(RunRecordCodec.encode(r) == reference, "record \(n)")
            if case .success(let back) = RunRecordCodec.decode(Array(RunRecordCodec.encode(r).utf8), file: "run.yaml") {
                #expect(back.node == r.node && back.command == r.command && back.inputs == r.inputs, "record \(n) reads back")
            } else {
                Issue.record("record \(n) does not read back")
            }
        }
    }

    @Test func stateRecordsReadAsTheirEntriesDo() {
        let at = Timestamp(seconds: 1_795_000_000)
        let states: [NodeState] = [
            .blocked(.waitingFor(port: "a", node: "n7")), .blocked(.other("a: b")), .blocked(.paramsChanged), .ready, .awaitingUser,
            .runningLocal, .queuedRemote, .runningRemote, .downloading, .succeeded, .skipped, .cancelled(reason: nil),
            .cancelled(reason: "Cancelled: 'x' failed (fail-fast)"), .failed(NodeError(summary: "exited with code 1: no", code: "exit(1)")),
            .failed(NodeError(summary: "s", code: "c", hint: "see `flowdir logs a b --run 2`")),
        ]
        for state in states {
            for (progress, job) in [(nil, nil), (0.5, "r-1"), (1.0 / 3, "no")] as [(Double?, String?)] {
                let r = NodeStateRecord(state: state, run: 4, progress: progress, updatedAt: at, job: job)
                let reference = YAMLWriter.document(InstanceCodec.encodeEntries(r),
                                                    comments: ["Written by flowdir. Change a node with flowdir commands or inbox/ files, not here."])
                #expect(InstanceCodec.encode(r) == reference, "\(state)")
            }
        }
    }
}
