import FlowdirCore
import FlowdirTemplates
import FlowdirTestSupport
import Testing

@Suite(.tags(.small)) struct LoaderTests {
    func load(_ text: String, file: String = "t.yaml", _ extra: [String: String] = [:]) -> LoadedTemplate {
        let fs = InMemoryFileSystem(extra)
        fs.write(file, text)
        return TemplateLoader(fileSystem: fs, userToolDirectories: ["home/tools", "extra/tools"]).load(path: file)
    }

    @Test func manyDistinctProblemsAreAllReportedInOneRun() {
        let result = load("""
            schema: app.workflow/v2
            name: Many problems
            nodes:
              - id: load
                kind: ImageLoader
                params: { path: a.png, colour: red }
              - id: mask1
                kind: UserMaskEditor
                await: { type: draw_mask, urgency: soon }
              - id: mask1
                kind: UserMaskEditor
              - id: view
                kind: Viewer
                inputs: { image: ImageRef, extra: TextRef }
                outputs: { shown: ImageRef }
                resources: { class: gpu }
            edges:
              - load.image -> mask1.image
              - mask1.mask -> view.image
              - load.image -> ghost.image
              - view.nothing -> mask1.image
            """)
        let codes = result.diagnostics.sortedByLocation().map(\.code)
        #expect(codes == [
            .invalidParam, .invalidAwait, .duplicateNodeId, .toolNotInstalled, .unboundRequiredPort,
            .invalidResourceClass, .portTypeMismatch, .unknownNode, .unknownPort,
        ])
        #expect(!result.isValid)
    }

    @Test func aMissingToolWithUndeclaredPortsTakesItsEdgesOnTrust() throws {
        // The node is blocked until its tool is installed; its ports can't be
        // known, so edges to and from it are not errors.
        let result = load("""
            schema: app.workflow/v2
            name: Later
            nodes:
              - { id: load, kind: ImageLoader, params: { path: a.png } }
              - { id: magic, kind: NotYetInstalled }
              - { id: mask, kind: UserMaskEditor }
            edges:
              - load.image -> magic.anything
              - magic.result -> mask.image
            """)
        #expect(result.isValid)
        #expect(result.diagnostics.map(\.code) == [.toolNotInstalled])
        #expect(result.graph?.order == ["load", "magic", "mask"])
    }

    @Test func portsAndEdgesInEveryForm() throws {
        let result = load("""
            schema: app.workflow/v2
            name: Forms
            nodes:
              - { id: a, kind: Src, outputs: { img: ImageRef, m: { type: MaskRef } } }
              - id: b
                kind: Dst
                inputs:
                  img: ImageRef
                  m: MaskRef?
                  d: { type: DepthRef, optional: true }
                  any: Any?
            edges:
              - "a.img -> b.img"
              - a.m → b.m
              - { from: a.img, to: b.any }
            """)
        #expect(result.isValid)
        let b = try #require(result.graph?.node("b"))
        #expect(b.inputs.map(\.optional) == [false, true, true, true])
        #expect(b.inputs.map(\.type) == [.image, .mask, .depth, .any])
        #expect(result.graph?.template.edges.map(\.description) == ["a.img -> b.img", "a.m -> b.m", "a.img -> b.any"])
    }

    @Test func yamlScalarsFollowTheCoreSchemaAndMergeKeysWork() throws {
        let result = load("""
            schema: app.workflow/v2
            name: Scalars
            defaults: &defaults { country: no, enabled: true, level: 3, ratio: 0.5, hex: 0x10, none: ~ }
            nodes:
              - id: c
                kind: ParamConfirm
                params:
                  <<: *defaults
                  level: 4
                  quoted: "3"
            """)
        let params = try #require(result.graph?.node("c")?.spec.params)
        #expect(params[key: "country"]?.value == .string("no"))  // not false: YAML 1.2, not 1.1
        #expect(params[key: "enabled"]?.value == .bool(true))
        #expect(params[key: "level"]?.value == .int(4))  // the node's own value wins over the merge
        #expect(params[key: "ratio"]?.value == .double(0.5))
        #expect(params[key: "hex"]?.value == .int(16))
        #expect(params[key: "none"]?.value == .null)
        #expect(params[key: "quoted"]?.value == .string("3"))
        #expect(result.diagnostics.map(\.message) == ["unknown key 'defaults' in the template; it is ignored"])
    }

    /// A tool's presets are checked as a node's params would be: a param the
    /// tool does not have (with the nearest name), a value out of range.
    @Test func presetsAreCheckedAgainstTheToolsParams() throws {
        let template = "schema: app.workflow/v2\nname: T\nnodes:\n  - { id: s, kind: Shade }\n"
        let tool = "kind: Shade\nparams: { steps: { type: integer, min: 1, max: 100 } }\nrun: { command: [shade] }\npresets:\n"
        var result = load(template, file: "wf/t.yaml", ["wf/tools/Shade.yaml": tool + "  fast: { steps: 10 }\n  slow: { steps: 90 }\n"])
        #expect(result.isValid, "\(result.diagnostics)")
        #expect(result.graph?.node("s")?.tool?.presets == [ParamPreset(name: "fast", params: [ParamEntry(key: "steps", value: .int(10))]),
                                                           ParamPreset(name: "slow", params: [ParamEntry(key: "steps", value: .int(90))])])
        result = load(template, file: "wf/t.yaml", ["wf/tools/Shade.yaml": tool + "  fast: { step: 10 }\n  huge: { steps: 500 }\n  none: 3\n"])
        #expect(!result.isValid)
        let messages = result.diagnostics.map { "\($0.message) | \($0.hint ?? "")" }
        #expect(messages.contains("preset 'fast' sets 'step', which tool Shade has no param for | did you mean 'steps'?"), "\(messages)")
        #expect(messages.contains { $0.hasPrefix("param 'steps' of preset 'huge' (tool Shade) ") && $0.contains("100") }, "\(messages)")
        #expect(messages.contains { $0.hasPrefix("preset 'none' of tool Shade must be a mapping of params to values") }, "\(messages)")
    }

    @Test func toolsAreFoundAlongTheSearchPathInOrder() throws {
        let tool = { (summary: String) in "kind: Shade\nsummary: \(summary)\nrun: { command: [shade] }\n" }
        let template = "schema: app.workflow/v2\nname: T\nnodes:\n  - { id: s, kind: Shade }\n  - { id: p, kind: UserAssetPicker }\n"
        // The template's own tools/ wins over the user's.
        var result = load(template, file: "wf/t.yaml", ["wf/tools/Shade.yaml": tool("template"), "home/tools/Shade.yaml": tool("user")])
        #expect(result.graph?.node("s")?.tool?.summary == "template")
        #expect(result.graph?.node("s")?.tool?.file == "wf/tools/Shade.yaml")
        result = load(template, file: "wf/t.yaml", ["home/tools/Shade.yaml": tool("user")])
        #expect(result.graph?.node("s")?.tool?.summary == "user")
        // The config's toolPaths come after the user's own folder.
        result = load(template, file: "wf/t.yaml", ["home/tools/Shade.yaml": tool("user"), "extra/tools/Shade.yaml": tool("extra")])
        #expect(result.graph?.node("s")?.tool?.summary == "user")
        result = load(template, file: "wf/t.yaml", ["extra/tools/Shade.yaml": tool("extra")])
        #expect(result.graph?.node("s")?.tool?.summary == "extra")
        // A tool file may stand in for a built-in of the same kind.
        result = load(template, file: "wf/t.yaml", [
            "home/tools/Shade.yaml": tool("user"),
            "home/tools/UserAssetPicker.yaml": "kind: UserAssetPicker\nsummary: mine\noutputs: { image: ImageRef }\nrun: { command: [pick] }\n",
        ])
        #expect(result.graph?.node("p")?.tool?.summary == "mine")
        // An instance directory: its workflow.yaml, with its own tools/.
        let instanceTemplate = template.replacingOccurrences(of: "UserAssetPicker", with: "Choice")
            .replacingOccurrences(of: "kind: Choice }", with: "kind: Choice, await: { type: choice, choices: [x] } }")
        let fs = InMemoryFileSystem(["inst/workflow.yaml": instanceTemplate, "inst/tools/Shade.yaml": tool("instance"),
                                     "inst/instance.yaml": "id: x\n"])
        result = TemplateLoader(fileSystem: fs).load(path: "inst")
        #expect(result.isValid, "\(result.diagnostics)")
        #expect(result.graph?.node("s")?.tool?.summary == "instance")
    }

    @Test func aDirectoryWithoutWorkflowIsUnreadable() {
        let fs = InMemoryFileSystem(["dir/readme.txt": "hi"])
        let result = TemplateLoader(fileSystem: fs).load(path: "dir")
        #expect(result.isUnreadable)
        #expect(result.diagnostics.first?.message == "dir is a directory, not a template or an instance (no workflow.yaml in it)")
    }

    @Test func jsonAndYamlOfTheSameTemplateAgree() throws {
        let yaml = load("schema: app.workflow/v2\nname: Same\nnodes:\n  - { id: l, kind: ImageLoader, params: { path: x.png } }\n  - { id: m, kind: UserMaskEditor }\nedges:\n  - l.image -> m.image\n")
        let json = load(#"{"schema": "app.workflow/v2", "name": "Same", "nodes": [{"id": "l", "kind": "ImageLoader", "params": {"path": "x.png"}}, {"id": "m", "kind": "UserMaskEditor"}], "edges": ["l.image -> m.image"]}"#, file: "t.json")
        #expect(yaml.isValid && json.isValid)
        #expect(yaml.graph?.order == json.graph?.order)
        #expect(yaml.graph?.template.edges == json.graph?.template.edges)
        #expect(yaml.graph?.node("l")?.spec.params == json.graph?.node("l")?.spec.params)
    }
}

import Foundation
