import FlowdirCore
import FlowdirIO
import FlowdirTemplates
import FlowdirTestSupport
import Testing

@Suite(.tags(.small)) struct SeedTemplateTests {
    let loader = TemplateLoader(fileSystem: LocalFileSystem())

    /// The seed's example, copied byte for byte from the brief, loads with
    /// no errors and no warnings (its tools ship in workflows/tools/).
    @Test func theSeedTemplateLoadsVerbatim() throws {
        let path = RepositoryPaths.workflows + "/stylize-with-mask.jsonc"
        let result = loader.load(path: path)
        #expect(result.diagnostics.isEmpty, "\(DiagnosticRenderer(sources: result.sources).render(result.diagnostics))")
        let graph = try #require(result.graph)
        let t = graph.template
        #expect(t.schema == "app.workflow/v2")
        #expect(t.name == "Stylize with user mask")
        #expect(t.nodes.map(\.id) == ["load1", "mask1", "stylize1", "compress1"])
        #expect(graph.order == ["load1", "mask1", "stylize1", "compress1"])
        #expect(t.options == WorkflowOptions(remoteConcurrency: 8, localConcurrency: 2, errorPolicy: .failFast))
        let mask = try #require(t.node("mask1")?.awaitSpec)
        #expect(mask.type == .drawMask)
        #expect(mask.urgency == .normal)
        #expect(mask.expiresIn?.seconds == 86_400)
        #expect(mask.onTimeout == .cancel)
        #expect(mask.ui == "mask-sheet")
        #expect(mask.notificationTitle == "Draw a mask")
        #expect(graph.node("stylize1")?.resourceClass == .remote)
        #expect(graph.node("stylize1")?.spec.params == [ParamEntry(key: "steps", value: .int(30)), ParamEntry(key: "cfg", value: .double(4.0))])
        #expect(graph.node("compress1")?.outputs[port: "file"]?.ext == "jpg")
        #expect(graph.node("load1")?.awaitSpec?.type == .selectAsset)  // `source: photos` asks a person
        #expect(graph.consumers(of: "load1") == ["mask1", "stylize1"])
        #expect(graph.descendants(of: "mask1") == ["stylize1", "compress1"])
    }

    @Test(arguments: ["parallel-variants.yaml", "review-and-render.yaml", "describe-image.json"])
    func theOtherShippedTemplatesAreValid(_ name: String) throws {
        let result = loader.load(path: RepositoryPaths.workflows + "/" + name)
        #expect(result.diagnostics.isEmpty, "\(DiagnosticRenderer(sources: result.sources).render(result.diagnostics))")
        #expect(result.isValid)
    }

    @Test func withoutItsToolsTheSeedStillLoadsWithBlockedNodes() throws {
        // Outside workflows/ there is no tools/ folder: the two custom kinds
        // are "not installed", a warning, and the template is still valid.
        let fs = InMemoryFileSystem()
        let bytes = try LocalFileSystem().readFile(RepositoryPaths.workflows + "/stylize-with-mask.jsonc", limit: 1 << 20)
        fs.write("elsewhere/seed.jsonc", bytes: bytes)
        let result = TemplateLoader(fileSystem: fs).load(path: "elsewhere/seed.jsonc")
        #expect(result.isValid)
        #expect(result.diagnostics.map(\.code) == [.toolNotInstalled, .toolNotInstalled])
        #expect(result.diagnostics.map(\.message) == [
            "node 'stylize1' will be blocked — Tool not installed: StylizeRemote",
            "node 'compress1' will be blocked — Tool not installed: CompressLocal",
        ])
        #expect(result.graph?.node("stylize1")?.tool == nil)
    }
}
