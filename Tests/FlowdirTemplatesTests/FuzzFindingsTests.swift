import FlowdirCore
@testable import FlowdirTemplates
import Testing

/// What fuzzing found (scripts/fuzz.sh, Fuzz/Targets/), each input fed
/// through the code path flowdir itself takes.
@Suite struct FuzzFindingsTests {
    /// Written as flowdir writes its files, read as it reads them: the same?
    func readsBack(_ entries: [ParamEntry]) -> (Bool, String) {
        let text = YAMLWriter.document(entries, comments: ["written by flowdir"])
        guard case .success(let doc) = InstanceCodec.document(Array(text.utf8), file: "nodes/a/params.yaml") else { return (false, text) }
        return (doc == entries, text)
    }

    /// template-yaml: `{ left: I\u{2028}mageRef }` read, then written as a
    /// plain scalar, broke the written file: NEL, LS and PS are line breaks
    /// to YAML, and a YAML reader refuses C1 controls, U+FFFE and U+FFFF.
    @Test(arguments: ["\u{2028}", "\u{2029}", "\u{85}", "\u{80}", "\u{9F}", "\u{FFFE}", "\u{FFFF}", "\u{FEFF}"])
    func unicodeLineBreaksAndNonCharactersAreWrittenSoTheyReadBack(_ c: String) {
        let texts = ["I\(c)mageRef", c, "\(c)x", "x\(c)", "a \(c) b", "\(c)\(c)"]
        // As values, as keys, and inside flow collections (argv lists, inline maps).
        let entries = texts.enumerated().map { ParamEntry(key: "k\($0.offset)", value: .string($0.element)) }
            + texts.enumerated().map { ParamEntry(key: "\($0.element)\($0.offset)", value: .int($0.offset)) }
            + [ParamEntry(key: "argv", value: .array(texts.map(ParamValue.string))),
               ParamEntry(key: "map", value: .object([ParamEntry(key: "m", value: .array([.object(entries(texts))]))]))]
        let (same, text) = readsBack(entries)
        #expect(same, "U+\(String(c.unicodeScalars.first!.value, radix: 16, uppercase: true)) written as:\n\(text)")
    }

    func entries(_ texts: [String]) -> [ParamEntry] {
        texts.enumerated().map { ParamEntry(key: "k\($0.offset)", value: .string($0.element)) }
    }

    /// The same through a node's params.yaml, as `new` writes it and the engine reads it.
    @Test func aParamWithALineSeparatorSurvivesParamsYAML() {
        let params = [ParamEntry(key: "prompt", value: .string("a cat\u{2028}on a mat")), ParamEntry(key: "note", value: .string("x\u{85}y"))]
        let node = NodeSpec(id: "n", kind: "Anything")
        let text = InstanceCodec.encodeParams(params, node: node, tool: nil)
        guard case .success(let back) = InstanceCodec.document(Array(text.utf8), file: "nodes/n/params.yaml") else {
            Issue.record("params.yaml does not read back:\n\(text)")
            return
        }
        #expect(back == params)
    }
}
