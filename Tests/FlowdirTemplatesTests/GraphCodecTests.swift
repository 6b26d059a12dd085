import FlowdirCore
import FlowdirIO
import FlowdirTemplates
import FlowdirTestSupport
import Testing

/// A graph written by `GraphCodec` and read back is the graph that was
/// written, to the last location: what the workflow cache relies on.
@Suite(.tags(.small)) struct GraphCodecTests {
    /// Uses every field of the model: each param type, await option, port
    /// form, run kind and placeholder, a built-in, a missing tool (a warning).
    static let everything: [String: String] = [
        "w/tools/Full.yaml": """
            kind: Full
            summary: Every field
            resources: remote
            inputs: { image: ImageRef, mask: MaskRef? }
            outputs: { out: { type: ImageRef, ext: png }, meta: JSONRef }
            params:
              sigma: { type: number, default: 2.5, min: 0, max: 100, summary: true, description: how much }
              steps: { type: integer, default: 30 }
              mode: { type: string, enum: [fast, slow], default: fast }
              flag: { type: boolean, default: true }
              list: { type: array, default: [1, "two", 3.5, null, { k: v }] }
              obj: { type: object }
              anything: { type: any }
              file: { type: path, required: true }
            presets: { quick: { steps: 10 }, soft: { sigma: 0.5, mode: slow, list: [1] } }
            run:
              command: [python3, "{tool.dir}/x.py", "--in={inputs.image}", "{{literal}}", "{params.sigma}", "{run.dir}/t", "{outputs.out}", "{outputs.meta}", "{inputs.mask}"]
            """,
        "w/tools/Api.yaml": """
            kind: Api
            inputs: { image: ImageRef }
            outputs: { image: ImageRef }
            run:
              http: { endpoint: gpu, model: acme/api, input: { a: 1, b: [true, null, -2.5e-3], image: "{inputs.image}" }, outputs: { image: "output[0]" } }
            """,
        "w/tools/Batch.yaml": """
            kind: Batch
            inputs: { data: JSONRef? }
            outputs: { report: TextRef }
            run: { slurm: { partition: debug, time: "00:10:00" } }
            """,
        "w/flow.yaml": """
            schema: flowdir/v1
            name: "Everything — ünïcode"
            options: { concurrency: { local: 3, remote: 5 }, errorPolicy: isolate-node, onChange: rerun }
            nodes:
              - { id: load, kind: ImageLoader, title: Load it, params: { path: photo.png } }
              - id: mask
                kind: UserMaskEditor
                await:
                  type: draw_mask
                  blocking: false
                  urgency: blocking
                  expiresIn: PT24H
                  notification: { title: Draw, body: "the sky, please" }
                  onTimeout: skip
                  ui: mask-sheet
              - id: pick
                kind: Choice
                await: { type: choice, choices: [warm, cool], default: warm, onTimeout: autoDefault, allowSkip: true, urgency: low }
              - id: full
                kind: Full
                resources: local
                inputs: { image: ImageRef }
                params: { file: x.txt, sigma: 4, steps: -3, flag: false, list: [1, [2, 3]], obj: { nested: { deep: [x, null] } }, anything: ~ }
              - { id: api, kind: Api }
              - { id: batch, kind: Batch, resources: { class: remote } }
              - { id: ghost, kind: NotInstalledYet, inputs: { x: FileRef?, x2: ImageRef? }, outputs: { y: FileRef } }
            edges:
              - load.image -> mask.image
              - mask.mask -> full.mask
              - load.image -> full.image
              - full.out -> api.image
              - full.meta -> batch.data
              - batch.report -> ghost.x
              - { from: [api, image], to: [ghost, x2] }
            """,
    ]

    static func loadEverything(at file: String = "w/flow.yaml") -> LoadedTemplate {
        TemplateLoader(fileSystem: InMemoryFileSystem(everything), userToolDirectories: ["home/tools"]).load(path: file)
    }

    func roundTrip(_ loaded: LoadedTemplate, base: String? = nil) throws -> LoadedTemplate {
        let graph = try #require(loaded.graph)
        let bytes = GraphCodec.encode(graph, diagnostics: loaded.diagnostics, base: base)
        let (back, diagnostics) = try #require(GraphCodec.decode(bytes[...], base: base ?? ""))
        var out = LoadedTemplate(file: loaded.file, template: back.template, graph: back,
                                 diagnostics: diagnostics, sources: loaded.sources)
        out.toolFiles = loaded.toolFiles
        return out
    }

    @Test func everyFieldComesBackAsItWas() throws {
        let loaded = Self.loadEverything()
        #expect(loaded.isValid, "\(loaded.diagnostics)")
        // The template does use what it claims to: a warning, the three run kinds, an await of each option.
        #expect(loaded.diagnostics.map(\.code) == [.toolNotInstalled])
        let graph = try #require(loaded.graph)
        #expect(Set(graph.nodes.compactMap { $0.tool.map { $0.run.backendKey ?? String("\($0.run)".prefix(4)) } }) == ["buil", "comm", "http", "slurm"])
        #expect(graph.node("mask")?.spec.awaitSpec?.expiresIn?.seconds == 86_400)
        #expect(graph.node("full")?.tool?.presets.map(\.name) == ["quick", "soft"])
        #expect(try roundTrip(loaded).fullDescription == loaded.fullDescription)
    }

    @Test func theRepositorysWorkflowsComeBackAsTheyWere() throws {
        let fs = LocalFileSystem()
        var checked = 0
        for dir in ["examples", "workflows"] {
            for name in try fs.listDirectory(RepositoryPaths.root + "/" + dir) where ["yaml", "json", "jsonc"].contains(Path.fileExtension(name)) {
                let loaded = TemplateLoader(fileSystem: fs).load(path: RepositoryPaths.root + "/\(dir)/\(name)")
                guard loaded.isValid else { continue }  // examples/broken.yaml is broken on purpose
                #expect(try roundTrip(loaded).fullDescription == loaded.fullDescription, "\(dir)/\(name)")
                checked += 1
            }
        }
        #expect(checked >= 6)
    }

    @Test func pathsUnderTheBaseFollowItAndNothingElseDoes() throws {
        // A param value that looks like a path under the folder is a value, not a path: it stays.
        var files = Self.everything
        files["w/flow.yaml"] = files["w/flow.yaml"]!.replacing("path: photo.png", with: "path: w/photo.png")
        let loaded = TemplateLoader(fileSystem: InMemoryFileSystem(files), userToolDirectories: ["home/tools"]).load(path: "w/flow.yaml")
        let graph = try #require(loaded.graph)
        let bytes = GraphCodec.encode(graph, diagnostics: loaded.diagnostics, base: "w")
        let back = try #require(GraphCodec.decode(bytes[...], base: "/srv/moved/w/"))
        #expect(back.graph.template.file == "/srv/moved/w/flow.yaml")
        #expect(back.graph.node("full")?.tool?.file == "/srv/moved/w/tools/Full.yaml")
        #expect(back.graph.node("full")?.spec.location?.file == "/srv/moved/w/flow.yaml")
        #expect(back.diagnostics.first?.file == "/srv/moved/w/flow.yaml")
        #expect(back.graph.node("load")?.spec.params[key: "path"]?.value == .string("w/photo.png"))
        // The same folder by the same name: byte for byte what was loaded.
        let same = try #require(GraphCodec.decode(bytes[...], base: "w"))
        var again = LoadedTemplate(file: loaded.file, template: same.graph.template, graph: same.graph,
                                   diagnostics: same.diagnostics, sources: loaded.sources)
        again.toolFiles = loaded.toolFiles
        #expect(again.fullDescription == loaded.fullDescription)
    }

    @Test func damagedBytesAreRefusedNotTrusted() throws {
        let loaded = Self.loadEverything()
        let bytes = GraphCodec.encode(try #require(loaded.graph), diagnostics: loaded.diagnostics)
        // Every cut is refused.
        for n in 0..<bytes.count { #expect(GraphCodec.decode(bytes[..<n]) == nil, "cut at \(n)") }
        // Bytes added after are refused; a changed byte never crashes.
        #expect(GraphCodec.decode((bytes + [0])[...]) == nil)
        for i in stride(from: 0, to: bytes.count, by: 7) {
            var damaged = bytes
            damaged[i] ^= 0x5A
            _ = GraphCodec.decode(damaged[...])
        }
    }
}
