import FlowdirCore
@testable import FlowdirTemplates
import FlowdirTestSupport
import Testing

/// The line reader of run.yaml must give what the YAML reader gives, or
/// step aside (nil).
@Suite(.tags(.small)) struct RunRecordLinesTests {
    /// Both readers on `bytes`: the line reader's answer, after checking it
    /// against the YAML reader's whenever it gives one.
    @discardableResult
    func both(_ bytes: [UInt8], sourceLocation: Testing.SourceLocation = #_sourceLocation) -> RunRecord? {
        guard let quick = RunRecordLines.decode(bytes) else { return nil }
        switch RunRecordCodec.decodeDocument(bytes, file: "run.yaml") {
        case .failure(let d):
            Issue.record("the YAML reader refuses what the line reader took: \(d.message)\n\(String(decoding: bytes, as: UTF8.self))",
                         sourceLocation: sourceLocation)
        case .success(let full):
            #expect(quick == full, "\(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
        }
        return quick
    }

    static let at = Timestamp(seconds: 1_795_000_000)

    static func record(inputs: Int = 1, outputs: Int = 1, command: [String] = ["touch", "/w/n5.1/out.bin"]) -> RunRecord {
        var r = RunRecord(run: 3, node: "n5", kind: "Touch", trigger: .auto, params: [],
                          inputs: (0..<inputs).map { InputUse(port: "in\($0)", node: "n\($0)", sourcePort: "out", run: 1,
                                                              blob: "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391") },
                          startedAt: at, host: "vm", user: "root")
        r.outputs = (0..<outputs).map { OutputRecord(port: "out\($0)", blob: "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", size: 12,
                                                     type: .image, file: "out/out\($0).png") }
        r.command = command
        r.finishedAt = Timestamp(seconds: 1_795_000_002)
        r.exitCode = 0
        return r
    }

    @Test func whatFlowdirWritesIsReadByLines() {
        var records = [Self.record(), Self.record(inputs: 0, outputs: 0, command: []), Self.record(inputs: 3, outputs: 2)]
        var failed = Self.record(outputs: 0)
        failed.exitCode = -9
        failed.job = "r8x2k"
        failed.finishedAt = nil
        records.append(failed)
        var retried = Self.record()
        retried.trigger = .retry
        records.append(retried)
        for r in records {
            let bytes = Array(RunRecordCodec.encode(r).utf8)
            #expect(both(bytes) == r)
            #expect((try? RunRecordCodec.decode(bytes, file: "run.yaml").get()) == r)
        }
    }

    /// Values a plain line cannot hold as they are, and parts it does not
    /// read, go the full way; the record read is the same.
    @Test func anythingElseIsLeftToTheYAMLReader() {
        var cases: [RunRecord] = []
        for odd in ["a b", "x: y", "#x", "'q'", "\"q\"", "true", "null", "12", "1.5", "", "é", "a,b", "[x]", "-x", "a:", "x\ty", "~"] {
            var r = Self.record()
            r.node = odd
            cases.append(r)
            r = Self.record(command: ["sh", "-c", odd])
            cases.append(r)
        }
        var withParams = Self.record()
        withParams.params = [ParamEntry(key: "steps", value: .int(20))]
        var withError = Self.record()
        withError.error = NodeError(summary: "boom", code: "exit3")
        var withURL = Self.record(command: ["curl", "http://localhost:8080/x"])
        withURL.host = "h"
        var onSlurm = Self.record(command: ["slurm", "sh", "-c", "x"])
        onSlurm.job = "4012"
        onSlurm.folder = "/home/ada/flows/photo 1"
        cases += [withParams, withError, withURL, onSlurm]
        for r in cases {
            let bytes = Array(RunRecordCodec.encode(r).utf8)
            #expect(both(bytes) == nil, "\(RunRecordCodec.encode(r))")
            #expect((try? RunRecordCodec.decode(bytes, file: "run.yaml").get()) == r)
        }
        // A port written twice (an edit's doing) is no record the lines read.
        let written = RunRecordCodec.encode(Self.record())
        let blob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        for block in ["  in0:\n    node: n0\n    port: out\n    run: 1\n    blob: \(blob)\n",
                      "  out0:\n    blob: \(blob)\n    size: 12\n    type: ImageRef\n    file: out/out0.png\n"] {
            #expect(written.contains(block))
            let doubled = written.replacing(block, with: block + block)
            #expect(RunRecordLines.decode(Array(doubled.utf8)) == nil, "\(doubled)")
        }
    }

    /// Edited by hand (a byte changed, a line gone or doubled), a record is
    /// either read the same by both readers or left to the YAML reader.
    @Test func editedRecordsAreReadAsTheYAMLReaderReadsThem() {
        var rng = SplitMix(seed: 0x5EED_0F_2026)
        let base = Array(RunRecordCodec.encode(Self.record(inputs: 2, outputs: 2)).utf8)
        let alphabet = Array(" :#-,[]{}'\"\n\t0123456789azAZ./_@~=".utf8)
        var taken = 0
        for _ in 0..<3000 {
            var bytes = base
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: bytes[Int.random(in: 0..<bytes.count, using: &rng)] = alphabet.randomElement(using: &rng)!
            case 1: bytes.insert(alphabet.randomElement(using: &rng)!, at: Int.random(in: 0...bytes.count, using: &rng))
            case 2: bytes.remove(at: Int.random(in: 0..<bytes.count, using: &rng))
            default:
                var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
                let i = Int.random(in: 0..<lines.count, using: &rng)
                if Bool.random(using: &rng) { lines.remove(at: i) } else { lines.insert(lines[i], at: i) }
                bytes = Array(lines.joined(separator: [0x0A]))
            }
            if both(bytes) != nil { taken += 1 }
        }
        // Most edits still read by lines (a changed letter in a name, say): the check above ran on them.
        #expect(taken > 300)
    }
}
