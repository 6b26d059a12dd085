import FlowdirCore
@testable import FlowdirTemplates
import FlowdirTestSupport
import Testing

/// What fuzzing found (scripts/fuzz.sh, Fuzz/Targets/), each input fed
/// through the code path flowdir itself takes.
@Suite(.tags(.small)) struct FuzzFindingsTests {
    /// request: a param named `<<` was written plain, and read back as YAML's
    /// merge key: the request file flowdir wrote did not read.
    @Test func aKeyThatIsYAMLsMergeKeyIsQuoted() throws {
        let text = YAMLWriter.document([ParamEntry(key: "params", value: .object([ParamEntry(key: "<<", value: .string("k.p.grue"))]))])
        let back = try InstanceCodec.document(Array(text.utf8), file: "r.request.yaml").get()
        guard case .object(let params)? = back[key: "params"]?.value else { Issue.record("no params in \(text)"); return }
        #expect(params.map(\.key) == ["<<"] && params.first?.value == .string("k.p.grue"), "\(text)")
    }

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

    /// duration (its sizes): `answerSizeLimit: 92233720368547758071.5GB`
    /// crashed loading the config (a Double beyond Int made an Int).
    @Test(arguments: ["92233720368547758071.5GB", "1e30GB", "1e19B", "infGB", "1e400KB"])
    func aSizeBeyondAnyFileIsAConfigErrorNamingIt(_ size: String) {
        guard case .failure(let d) = ConfigDecoder.decode(Array("answerSizeLimit: \(size)\n".utf8), file: "/c/config.yaml", home: "/h") else {
            Issue.record("answerSizeLimit: \(size) was accepted")
            return
        }
        #expect(d.message.contains("answerSizeLimit"), "\(d.message)")
        let endpoint = "endpoints:\n  gpu:\n    url: http://gpu-box:8700/v1\n    inlineLimit: \(size)\n"
        guard case .failure(let e) = ConfigDecoder.decode(Array(endpoint.utf8), file: "/c/config.yaml", home: "/h") else {
            Issue.record("inlineLimit: \(size) was accepted")
            return
        }
        #expect(e.message.contains("inlineLimit"), "\(e.message)")
    }

    @Test func theLargestSizesStillRead() throws {
        // Sizes stop at 1 TB (past it a config error names the key); up to it, exact.
        let config = try ConfigDecoder.decode(Array("answerSizeLimit: 1TB\n".utf8), file: "/c/config.yaml", home: "/h").get()
        #expect(config.answerSizeLimit == 1 << 40)
    }
}

extension FuzzFindingsTests {
    /// template-json: a JSON template nested deeper than 100 levels (JSON
    /// allows 128) was read, but the workflow.yaml `new` converts it to was
    /// refused ("nesting is deeper than 100 levels"): the instance would not load.
    @Test func aJSONTemplateAsDeepAsJSONAllowsReadsBackAsYAML() throws {
        let depth = JSONParser.maxDepth - 5  // within the document, `nodes`, the node and `params`, around a number
        let json = #"{"schema": "app.workflow/v2", "name": "deep", "nodes": [{"id": "a", "kind": "Any", "params": {"x": "#
            + String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth) + "}}]}"
        let parsed = try DocumentReader.read(Array(json.utf8), file: "deep.json").get()
        guard case .object(let entries) = parsed.value.paramValue else { throw Failure("not a mapping") }
        // As OpenInstance.workflowText converts it.
        let yaml = YAMLWriter.document(entries, comments: ["Instantiated from deep.json, converted to YAML."])
        let back = DocumentReader.read(Array(yaml.utf8), file: "workflow.yaml")
        #expect((try? back.get())?.value.paramValue == .object(entries), "\(back)")
        // Deeper than JSON allows is refused by both, with the same words.
        let deeper = "a: " + String(repeating: "[", count: JSONParser.maxDepth + 1) + String(repeating: "]", count: JSONParser.maxDepth + 1)
        guard case .failure(let d) = DocumentReader.read(Array(deeper.utf8), file: "t.yaml") else { throw Failure("read") }
        #expect(d.message == "nesting is deeper than \(JSONParser.maxDepth) levels")
    }

    struct Failure: Error { var why: String; init(_ why: String) { self.why = why } }
}

extension FuzzFindingsTests {
    /// await: a title (a template's `notification.title`) with a line break
    /// or a control character went into the await file's comment as it was:
    /// its next line became YAML of the file (`id: other`, a second `id`),
    /// or a YAML reader refused the file.
    @Test(arguments: ["Draw\nid: other", "Pick\u{1}one", "a\r\nb: 1", "x\u{2028}y: 2", "tab\there", "\u{85}z: 3", "end\n", "\u{FEFF}bom"])
    func aTitleWithALineBreakStaysInItsComment(_ title: String) throws {
        let a = AwaitRecord(id: "e2d819f6", node: "mask1", type: .drawMask, title: title, detail: "more\nnode: x",
                            createdAt: Timestamp(seconds: 1_790_000_000), link: "flowdir://x/node/mask1")
        let text = AwaitCodec.encode(a, instanceName: "my-photo")
        let back = try AwaitCodec.decode(Array(text.utf8), file: "inbox/mask1.await.yaml").get()
        #expect(back == a, "\(text)")
    }

    /// tool: a param's `description` with a line break went into the
    /// params.yaml comment as it was: `width: 3` after it was a second key.
    @Test func aParamDescriptionWithALineBreakStaysInItsComment() throws {
        let fs = InMemoryFileSystem([
            "w/tools/Resize.yaml": """
                kind: Resize
                inputs: { image: ImageRef }
                outputs: { image: ImageRef }
                params:
                  width: { type: integer, default: 512, description: "pixels\\nwidth: 3" }
                run: { command: [convert, "{inputs.image}", "{outputs.image}"] }
                """,
            "w/flow.yaml": """
                schema: app.workflow/v2
                name: resize
                nodes:
                  - { id: load, kind: ImageLoader, params: { path: photo.png } }
                  - { id: n, kind: Resize }
                edges: [load.image -> n.image]
                """,
        ])
        let loaded = TemplateLoader(fileSystem: fs).load(path: "w/flow.yaml")
        let node = try #require(loaded.graph?.node("n"), "\(loaded.diagnostics)")
        let text = InstanceCodec.encodeParams(node.spec.params, node: node.spec, tool: node.tool)
        let back = try InstanceCodec.document(Array(text.utf8), file: "nodes/n/params.yaml").get()
        #expect(back == [ParamEntry(key: "width", value: .int(512))], "\(text)")
    }
}

extension FuzzFindingsTests {
    /// template-yaml: `e: [{ \u{34D} }]` (a key opening with a combining
    /// mark, in a mapping in a list) was written `- : null`: the writer cut
    /// the indentation by Characters, and the space before the mark was one
    /// with it, so the key was cut away.
    @Test func aKeyOpeningWithACombiningMarkKeepsItsPlaceInAList() throws {
        let parsed = try DocumentReader.read(Array("e:\n- {\u{34D}}\n".utf8), file: "t.yaml").get()
        guard case .object(let entries) = parsed.value.paramValue else { throw Failure("not a mapping") }
        #expect(entries == [ParamEntry(key: "e", value: .array([.object([ParamEntry(key: "\u{34D}", value: .null)])]))])
        let (same, text) = readsBack(entries)
        #expect(same, "written as:\n\(text)")
    }
}

extension FuzzFindingsTests {
    /// run-record: `exitCode: 4294967296` in a run.yaml (an edit, a sync)
    /// crashed reading it (an Int made an Int32); it reads as no exit code.
    @Test(arguments: ["4294967296", "-2147483649", "9223372036854775807"])
    func anExitCodeBeyondAnyIsNone(_ code: String) throws {
        let text = "run: 1\nnode: a\nkind: K\ntrigger: auto\nparams: {}\ninputs: {}\noutputs: {}\nstartedAt: 2026-11-25T01:22:00Z\nexitCode: \(code)\nhost: h\nuser: u\n"
        let record = try RunRecordCodec.decode(Array(text.utf8), file: "nodes/a/runs/1/run.yaml").get()
        #expect(record.exitCode == nil && record.run == 1 && record.node == "a")
        let kept = try RunRecordCodec.decode(Array(text.replacingOccurrences(of: code, with: "-2147483648").utf8), file: "run.yaml").get()
        #expect(kept.exitCode == Int32.min)
    }
}

extension FuzzFindingsTests {
    /// template-json: a key of more than 1024 characters (quotes and
    /// escapes counted) was written as `"key": value`, which a YAML reader
    /// does not take ("mapping values are not allowed in this context").
    @Test func aKeyLongerThanYAMLTakesBeforeItsColonIsWrittenExplicitly() {
        let long = String(repeating: "k", count: 1030), escaped = String(repeating: "\n", count: 600)
        let entries = [ParamEntry(key: long, value: .string("v")),
                       ParamEntry(key: escaped, value: .object([ParamEntry(key: long, value: .int(1))])),
                       ParamEntry(key: "list", value: .array([.object([ParamEntry(key: long, value: .null), ParamEntry(key: "b", value: .int(2))])])),
                       ParamEntry(key: "flow", value: .array([.object([ParamEntry(key: long, value: .int(3))]), .int(4)])),
                       ParamEntry(key: "short", value: .bool(true))]
        let (same, text) = readsBack(entries)
        #expect(same, "written as:\n\(text.prefix(3000))")
        // A run.yaml's ports too.
        var r = RunRecord(run: 1, node: "a", kind: "K", trigger: .auto, params: [],
                          inputs: [InputUse(port: long, node: "b", sourcePort: "out", run: 1, blob: "0123")],
                          startedAt: Timestamp(seconds: 1_790_000_000), host: "h", user: "u")
        r.outputs = [OutputRecord(port: escaped, blob: "4567", size: 1, type: .file, file: "out/x")]
        let back = try? RunRecordCodec.decode(RunRecordCodec.encodeBytes(r), file: "run.yaml").get()
        #expect(back == r)
    }
}

extension FuzzFindingsTests {
    /// template-yaml: `s: [l:?]` read in block style as the string `l:?`,
    /// then written in a flow list as it was, which libyaml refuses
    /// ("found unexpected ':'").
    @Test func aColonBeforeAQuestionMarkIsQuotedInAFlowList() throws {
        let parsed = try DocumentReader.read(Array("s:\n- l:?\n".utf8), file: "t.yaml").get()
        guard case .object(let entries) = parsed.value.paramValue else { throw Failure("not a mapping") }
        #expect(entries == [ParamEntry(key: "s", value: .array([.string("l:?")]))])
        let more = entries + [ParamEntry(key: "map", value: .object([ParamEntry(key: "a:?b", value: .string("x:?"))])),
                              ParamEntry(key: "argv", value: .array([.string("--flag=a:?"), .string(":?"), .string("a:b")]))]
        let (same, text) = readsBack(more)
        #expect(same, "written as:\n\(text)")
    }
}
