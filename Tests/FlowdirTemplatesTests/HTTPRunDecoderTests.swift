import FlowdirCore
import FlowdirTemplates
import FlowdirTestSupport
import Testing

/// A tool's `run.http` checked where it is written (docs/templates-and-tools.md), so
/// `flowdir check` says what a run would otherwise find only when sending.
@Suite(.tags(.small)) struct HTTPRunDecoderTests {
    static let template = """
        schema: app.workflow/v2
        name: Remote
        nodes:
          - { id: load, kind: ImageLoader, params: { path: a.png } }
          - { id: gen, kind: Gen }
        edges: [load.image -> gen.image]
        """

    func load(http: String) -> LoadedTemplate {
        let tool = """
            kind: Gen
            resources: remote
            inputs: { image: ImageRef, mask: MaskRef? }
            outputs: { out: { type: ImageRef, ext: png }, preview: ImageRef? }
            params: { steps: { type: integer, default: 30 } }
            run:
              http:
            \(http.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n"))
            """
        let fs = InMemoryFileSystem(["wf/t.yaml": Self.template, "wf/tools/Gen.yaml": tool])
        return TemplateLoader(fileSystem: fs, userToolDirectories: []).load(path: "wf/t.yaml")
    }

    func errors(http: String) -> [Diagnostic] { load(http: http).diagnostics.errors }

    @Test func aWellFormedRunHTTPIsTakenAsWritten() throws {
        let result = load(http: """
            endpoint: gpu
            model: acme/gen
            input: { image: "{inputs.image}", mask: "{inputs.mask}", steps: "{params.steps}", label: "steps={params.steps}", fixed: [1, { a: true }] }
            outputs: { out: "output.images[0]", preview: output.preview }
            """)
        #expect(result.diagnostics.isEmpty, "\(result.diagnostics)")
        guard case .backend("http", let entries)? = result.graph?.node("gen")?.tool?.run else {
            Issue.record("not run.http")
            return
        }
        #expect(entries[key: "model"]?.value.stringValue == "acme/gen")
    }

    @Test func endpointAndExactlyOneOfModelAndVersionAreNeeded() {
        let noEndpoint = errors(http: "model: acme/gen\noutputs: { out: output, preview: 'output[1]' }")
        #expect(noEndpoint.count == 1 && noEndpoint[0].message.contains("has no `endpoint`"))
        let neither = errors(http: "endpoint: gpu\noutputs: { out: output, preview: 'output[1]' }")
        #expect(neither.count == 1 && neither[0].message.contains("needs `model: owner/name` or `version: <id>`"))
        let both = errors(http: "endpoint: gpu\nmodel: acme/gen\nversion: abc123\noutputs: { out: output, preview: 'output[1]' }")
        #expect(both.count == 1 && both[0].message.contains("both `model` and `version`"))
        #expect(both.first?.location?.line == 10)  // the `version:` key, in the tool file
        #expect(both.first?.file == "wf/tools/Gen.yaml")
        let badModel = errors(http: "endpoint: gpu\nmodel: stylize\noutputs: { out: output, preview: 'output[1]' }")
        #expect(badModel.count == 1 && badModel[0].message.contains("must be owner/name") && badModel[0].hint == "for example `model: acme/stylize`")
    }

    @Test func everyOutputPortIsMappedToAPathThatReads() {
        let missing = errors(http: "endpoint: gpu\nmodel: acme/gen\noutputs: { out: output }")
        #expect(missing.count == 1 && missing[0].message.contains("output 'preview'"))
        #expect(missing.first?.hint?.contains("preview: output") == true)
        let none = errors(http: "endpoint: gpu\nmodel: acme/gen")
        #expect(none.count == 1 && none[0].message.contains("'out', 'preview'"))
        let unknown = errors(http: "endpoint: gpu\nmodel: acme/gen\noutputs: { out: output, preview: 'output[1]', oot: 'output[2]' }")
        #expect(unknown.count == 1 && unknown[0].message.contains("has no output 'oot'") && unknown[0].hint?.contains("out") == true)
        let badPath = errors(http: "endpoint: gpu\nmodel: acme/gen\noutputs: { out: result.image, preview: \"output[x]\" }")
        #expect(badPath.count == 2 && badPath.allSatisfy { $0.message.contains("must be like output, output[0]") })
    }

    @Test func inputPlaceholdersNameTheToolsInputsAndParams() {
        let outputs = "outputs: { out: output, preview: 'output[1]' }"
        let typo = errors(http: "endpoint: gpu\nmodel: acme/gen\ninput: { steps: \"{params.stpes}\" }\n" + outputs)
        #expect(typo.count == 1 && typo[0].message.contains("no param 'stpes'") && typo[0].hint?.contains("steps") == true)
        #expect(typo.first?.location?.line == 10)
        let noInput = errors(http: "endpoint: gpu\nmodel: acme/gen\ninput: { nested: [\"{inputs.imag}\"] }\n" + outputs)
        #expect(noInput.count == 1 && noInput[0].message.contains("no input 'imag'"))
        let fileInText = errors(http: "endpoint: gpu\nmodel: acme/gen\ninput: { image: \"file={inputs.image}\" }\n" + outputs)
        #expect(fileInText.count == 1 && fileInText[0].message.contains("sends a file only as a whole value"))
        let local = errors(http: "endpoint: gpu\nmodel: acme/gen\ninput: { dir: \"{run.dir}\", out: \"{outputs.out}\" }\n" + outputs)
        #expect(local.count == 2 && local.allSatisfy { $0.message.contains("mean nothing to the server") })
        let unclosed = errors(http: "endpoint: gpu\nmodel: acme/gen\ninput: { a: \"{params.steps\" }\n" + outputs)
        #expect(unclosed.count == 1 && unclosed[0].message.contains("without a closing"))
        let notMapping = errors(http: "endpoint: gpu\nmodel: acme/gen\ninput: [a, b]\n" + outputs)
        #expect(notMapping.count == 1 && notMapping[0].message.contains("`input` of `run.http` of tool Gen must be a mapping"))
    }

    @Test func anUnknownKeyIsAWarningWithASuggestion() {
        let result = load(http: "endpoint: gpu\nmodel: acme/gen\nouputs: {}\noutputs: { out: output, preview: 'output[1]' }")
        #expect(result.diagnostics.errors.isEmpty)
        #expect(result.diagnostics.warnings.first?.message.contains("unknown key 'ouputs'") == true)
    }
}
