import FlowdirCore
@testable import FlowdirTemplates
import FlowdirTestSupport
import Testing

/// The hand reader of flat node files must give what the YAML reader
/// gives, or step aside (nil).
@Suite(.tags(.small)) struct FlatYAMLTests {
    /// Both readers on `text`: the hand reader's answer, after checking it
    /// against the YAML reader's whenever it gives one.
    @discardableResult
    func both(_ text: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) -> [ParamEntry]? {
        let bytes = Array(text.utf8)
        guard let flat = FlatYAML.parse(bytes, file: "f.yaml") else { return nil }
        switch InstanceCodec.fullDocument(bytes, file: "f.yaml") {
        case .failure(let d):
            Issue.record("the YAML reader refuses what the hand reader took: \(d.message)\n\(text)", sourceLocation: sourceLocation)
        case .success(let full):
            // As text: NaN is no value's equal, not even its own.
            #expect(flat.map { "\($0.key)=\($0.value)" } == full.map { "\($0.key)=\($0.value)" }, "\(text)",
                    sourceLocation: sourceLocation)
            #expect(flat.map(\.location) == full.map(\.location), "\(text)", sourceLocation: sourceLocation)
        }
        return flat
    }

    @Test func flowdirsOwnNodeFilesAreReadByHand() {
        let at = Timestamp(seconds: 1_795_000_000)
        let states: [NodeStateRecord] = [
            NodeStateRecord(state: .blocked(BlockReason(text: "Waiting for 'a' from 'n7'")), updatedAt: at),
            NodeStateRecord(state: .ready, updatedAt: at),
            NodeStateRecord(state: .runningLocal, run: 3, updatedAt: at),
            NodeStateRecord(state: .succeeded, run: 12, updatedAt: at),
            NodeStateRecord(state: .runningRemote, run: 1, progress: 0.5, updatedAt: at, job: "r8x2k"),
        ]
        for record in states {
            let text = InstanceCodec.encode(record)
            let flat = both(text)
            #expect(flat != nil, "\(text)")
            #expect(flat.flatMap { try? InstanceCodec.decodeState($0, file: "f.yaml") } == record)
        }
        #expect(both("# Params of node 'n5' (Touch). Edit freely: flowdir notices the change.\n{}\n") == [])
        #expect(both("steps: 20\nstrength: 0.75\nname: soft light\non: yes\n")?.map(\.value)
            == [.int(20), .double(0.75), .string("soft light"), .string("yes")])
    }

    @Test func anythingUnusualIsLeftToTheYAMLReader() {
        for text in ["", "# only a comment\n", "a: 'quoted'\n", "a: [1, 2]\n", "a:\n  b: 1\n", "  a: 1\n", "a: 1 # why\n",
                     "a: 1\na: 2\n", "true: 1\n", "null: x\n", "a: x\r\n", "a:\tx\n", "a: é\n", "{}\n{}\n", "{}\na: 1\n",
                     "a: 1\n{}\n", "---\na: 1\n", "a: b: c\n", "a: -1\n", "a:b\n", "a: x \n", "- a\n", "a: {}\n", "a: &x 1\n"] {
            #expect(both(text) == nil, "\(text)")
        }
    }

    /// YAML 1.2's core schema, which both readers share.
    @Test func plainScalarsResolveAsTheCoreSchemaSays() {
        let cases: [(String, String)] = [
            ("", "null"), ("~", "null"), ("null", "null"), ("Null", "null"), ("NULL", "null"), ("nULL", "string(\"nULL\")"),
            ("n5", "string(\"n5\")"), ("true", "bool(true)"), ("True", "bool(true)"), ("TRUE", "bool(true)"),
            ("tRUE", "string(\"tRUE\")"), ("t", "string(\"t\")"), ("false", "bool(false)"), ("False", "bool(false)"),
            ("FALSE", "bool(false)"), ("f", "string(\"f\")"), ("yes", "string(\"yes\")"), ("on", "string(\"on\")"),
            (".inf", "double(inf)"), ("+.Inf", "double(inf)"), ("-.INF", "double(-inf)"), (".NaN", "double(nan)"),
            ("0x1F", "int(31)"), ("0o17", "int(15)"), ("-5", "int(-5)"), ("+5", "int(5)"), ("007", "int(7)"),
            ("1.5", "double(1.5)"), ("1e3", "double(1000.0)"), ("-", "string(\"-\")"), (".", "string(\".\")"),
            ("1.2.3", "string(\"1.2.3\")"), ("2026-11-22", "string(\"2026-11-22\")"),
        ]
        for (text, kind) in cases {
            #expect("\(YAMLReader.Composer.resolve(text))" == kind, "\(text)")
        }
    }

    /// Random documents of tricky pieces: whenever the hand reader answers,
    /// the YAML reader agrees (`both`), and it answers often enough to matter.
    @Test func randomDocumentsAgreeWithTheYAMLReader() {
        let keys = ["a", "run", "state", "x-y", "_k", "K9", "true", "null", "No", "1a", "a b", "<<"]
        let separators = [": ", ":", ":  ", " : ", ":\t"]
        let values = ["0", "-1", "+2", "1.5", "1e3", "0x1F", "0o17", "007", "true", "True", "yes", "~", "null", "", "text",
                      "it's", "say \"hi\"", "a: b", "a #b", "a#b", "[1]", "{}", "'q'", "\"q\"", "2026-11-22T16:19:57Z",
                      ".inf", "-.inf", ".nan", "x ", "&a", "*a", "a,b", "é", "a:", "%x", "@x", "`x`", "!tag", "|", ">", "?x",
                      "Waiting for 'a' from 'n7'", "1_000", "1.", ".5", "-", "a - b", "a: "]
        let others = ["# comment", "#", "", "{}", "  indented: 1", "---", "...", "- item", "  ", "key"]
        var rng = SplitMix(seed: 20261122)
        var answered = 0
        for _ in 0..<4000 {
            var lines: [String] = []
            for _ in 0..<Int.random(in: 1...5, using: &rng) {
                if Int.random(in: 0..<4, using: &rng) == 0 {
                    lines.append(others.randomElement(using: &rng)!)
                } else {
                    let sep = Int.random(in: 0..<4, using: &rng) == 0 ? separators.randomElement(using: &rng)! : ": "
                    lines.append(keys.randomElement(using: &rng)! + sep + values.randomElement(using: &rng)!)
                }
            }
            let ending = Int.random(in: 0..<8, using: &rng) == 0 ? "\r\n" : "\n"
            var text = lines.joined(separator: ending)
            if Bool.random(using: &rng) { text += ending }
            if both(text) != nil { answered += 1 }
        }
        #expect(answered > 100, "the hand reader answered \(answered) of 4000")
    }
}
