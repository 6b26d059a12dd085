import FlowdirCore
import FlowdirTemplates
import FlowdirTestSupport
import Testing

@Suite(.tags(.small)) struct YAMLWriterTests {
    func roundTrip(_ entries: [ParamEntry]) throws -> [ParamEntry] {
        let text = YAMLWriter.document(entries, comments: ["a comment"])
        guard case .success(let doc) = InstanceCodec.document(Array(text.utf8), file: "t.yaml") else {
            Issue.record("does not read back:\n\(text)")
            return []
        }
        return doc
    }

    @Test func stringsThatLookLikeOtherThingsStayStrings() throws {
        let tricky = ["no", "yes", "on", "null", "~", "true", "False", "1", "1.0", "0x1F", "1e3", ".inf", "", " lead",
                      "trail ", "a: b", "a #b", "#x", "- x", "[x]", "{x}", "*alias", "&anchor", "!tag", "|", ">",
                      "quote\"s", "back\\slash", "new\nline", "tab\there", "ünïcode", "@at", "`tick`", "%pct", "x:",
                      "\u{FEFF}bom", "mid\u{FEFF}bom", "+12", ".5", "123456789", "-.inf", "+.INF", ".NaN", "Yes", "OFF",
                      "NULL", "Null", "TRUE", "trueish", "notnull", "1e-3", "0o17", "12:30", "a\u{7F}b"]
        let entries = tricky.enumerated().map { ParamEntry(key: "k\($0.offset)", value: .string($0.element)) }
        #expect(try roundTrip(entries) == entries)
        // The same strings inside flow collections (argv lists, inline maps).
        let flow = ["a, b", "x]", "{y}", "p,q", "import sys; f(a, b)"] + tricky
        let inFlow = [ParamEntry(key: "argv", value: .array(flow.map(ParamValue.string))),
                      ParamEntry(key: "map", value: .object(flow.enumerated().map { ParamEntry(key: "k\($0.offset), x", value: .string($0.element)) }))]
        #expect(try roundTrip(inFlow) == inFlow)
    }

    /// What starts like a number is quoted exactly when it reads as one (or
    /// as a null or boolean): every string of up to four of these bytes.
    @Test func numberLikeStringsAreQuotedExactlyWhenTheyReadAsSomethingElse() {
        let alphabet = Array("01.+-eExaFnNIfT:_o9".utf8)
        var strings: [[UInt8]] = [[]]
        var checked = 0
        for _ in 1...4 {
            strings = strings.flatMap { s in alphabet.map { s + [$0] } }
            for bytes in strings {
                let s = String(decoding: bytes, as: UTF8.self)
                guard let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: ".") || (first >= 0x30 && first <= 0x39),
                      bytes.last != UInt8(ascii: ":") else { continue }
                let plain = YAMLWriter.scalar(s) == s
                let readsAsItself = if case .string(let back) = YAMLScalar.resolve(s) { back == s } else { false }
                #expect(plain == readsAsItself, "\(s): plain \(plain), reads as itself \(readsAsItself)")
                checked += 1
            }
        }
        #expect(checked > 10_000)
    }

    /// Short words: plain, except those a YAML 1.1 or 1.2 reader takes for a
    /// boolean or a null, in any case (`y`, `Off`, `NULL`, `nUll`).
    @Test func shortWordsArePlainUnlessReserved() {
        let words = ["y", "N", "no", "Off", "oN", "yes", "TRUE", "false", "null", "nUll",
                     "a", "run", "node", "kind", "state", "nope", "ye", "nul", "offs", "trues"]
        let text = YAMLWriter.document(words.map { ParamEntry(key: $0, value: .string($0)) })
        let quoted: Set = ["y", "N", "no", "Off", "oN", "yes", "TRUE", "false", "null", "nUll"]
        let expected = words.map { quoted.contains($0) ? "\"\($0)\": \"\($0)\"\n" : "\($0): \($0)\n" }.joined()
        #expect(text == expected)
    }

    @Test func nestedValuesRoundTrip() throws {
        let entries = [
            ParamEntry(key: "int", value: .int(-3)), ParamEntry(key: "double", value: .double(4.0)),
            ParamEntry(key: "small", value: .double(0.000125)), ParamEntry(key: "bool", value: .bool(false)),
            ParamEntry(key: "null", value: .null), ParamEntry(key: "list", value: .array([.int(1), .string("two"), .bool(true)])),
            ParamEntry(key: "empty list", value: .array([])), ParamEntry(key: "empty map", value: .object([])),
            ParamEntry(key: "map", value: .object([ParamEntry(key: "a", value: .object([ParamEntry(key: "b", value: .string("c"))]))])),
            ParamEntry(key: "list of maps", value: .array([
                .object([ParamEntry(key: "id", value: .string("x")), ParamEntry(key: "n", value: .int(1))]),
                .object([ParamEntry(key: "id", value: .string("y")), ParamEntry(key: "list", value: .array([.array([.int(1)])]))]),
            ])),
        ]
        #expect(try roundTrip(entries) == entries)
    }

    @Test func theWrittenTextIsWhatAPersonWouldWrite() {
        let text = YAMLWriter.document([
            ParamEntry(key: "steps", value: .int(30)), ParamEntry(key: "cfg", value: .double(4.0)),
            ParamEntry(key: "style", value: .string("no")),
            ParamEntry(key: "nodes", value: .array([.object([ParamEntry(key: "id", value: .string("a")), ParamEntry(key: "kind", value: .string("K"))])])),
        ], comments: ["Params."])
        #expect(text == """
            # Params.
            steps: 30
            cfg: 4.0
            style: "no"
            nodes:
              - id: a
                kind: K

            """)
    }
}
