import FlowdirCore
import FlowdirTestSupport
import Testing

/// Where each file in `inbox/` goes, from its name and the open questions
/// alone (the engine's `takeInboxEvent` carries the verdict out;
/// `EngineTests` and the answer tests run it with real folders).
@Suite(.tags(.small)) struct InboxRoutingTests {
    /// load1 → mask1 (asks for a mask) → blur1.
    let graph: WorkflowGraph = {
        let tool = ToolDefinition(kind: "T", inputs: [PortSpec(name: "in", type: .file, optional: true)],
                                  outputs: [PortSpec(name: "out", type: .file)], run: .builtin, flexiblePorts: true)
        let t = WorkflowTemplate(name: "g", nodes: [
            NodeSpec(id: "load1", kind: "T", outputs: [PortSpec(name: "out", type: .file)]),
            NodeSpec(id: "mask1", kind: "T", inputs: [PortSpec(name: "in", type: .file)],
                     outputs: [PortSpec(name: "mask", type: .mask)], awaitSpec: AwaitSpec(type: .drawMask)),
            NodeSpec(id: "blur1", kind: "T", inputs: [PortSpec(name: "in", type: .mask)], outputs: [PortSpec(name: "out", type: .file)]),
        ], edges: [
            EdgeSpec(from: PortRef(node: "load1", port: "out"), to: PortRef(node: "mask1", port: "in")),
            EdgeSpec(from: PortRef(node: "mask1", port: "mask"), to: PortRef(node: "blur1", port: "in")),
        ])
        let validated = TemplateValidator.validate(t) { _ in .found(tool) }
        guard let g = validated.graph else { fatalError("\(validated.diagnostics)") }
        return g
    }()

    var question: AwaitRecord {
        AwaitPolicy.make(id: "q1", node: graph.node("mask1")!, spec: AwaitSpec(type: .drawMask), instanceID: "i",
                         now: Timestamp(seconds: 0), context: [], params: [])
    }

    func route(_ name: String, settled: Bool = true, mask: NodeState = .awaitingUser, asked: Bool = true,
               answered: Set<String> = [], load: NodeState = .succeeded) -> InboxRoute {
        let states: [String: NodeState] = ["load1": load, "mask1": mask, "blur1": .blocked(.other(""))]
        return InboxRouting.route(name, settled: settled, graph: graph, awaits: asked ? ["mask1": question] : [:],
                                  state: { states[$0]! }, answered: answered, instanceName: "my-photo")
    }

    @Test func anAnswerToTheOpenQuestionGoesToItsPort() {
        #expect(route("mask1.mask.png") == .answer(node: "mask1", expected: ExpectedFile(port: "mask", type: .mask, file: "mask1.mask.png")))
        #expect(route("mask1.mask.webp") == .answer(node: "mask1", expected: ExpectedFile(port: "mask", type: .mask, file: "mask1.mask.png")),
                "any extension of the port's type: its content decides")
    }

    @Test func flowdirsOwnFilesAndTheQuestionItselfAreLeftAlone() {
        for name in ["mask1.await.yaml", ".mask1.mask.png.part", "done"] {
            #expect(route(name) == .pass, "\(name)")
        }
    }

    @Test func aFileStillBeingWrittenIsNeverRefusedNorTaken() {
        for name in ["mask1.mask.png", "mask2.mask.png", "mask1.image.png", "blur1.out.png", "notes"] {
            #expect(route(name, settled: false) == .pass, "\(name)")
        }
    }

    @Test func wrongNamesAreRefusedWithWhatToDo() {
        #expect(route("notes") == .refuse(note: "notes", reason: "it is not named for an answer", hint: .expectedNames(node: nil)))
        #expect(route("mask2.mask.png") == .refuse(note: "mask2", reason: "there is no node 'mask2' in this workflow (did you mean 'mask1'?)",
                                                   hint: .expectedNames(node: nil)))
        #expect(route("mask1.image.png") == .refuse(note: "mask1", reason: "'mask1' has no port 'image'", hint: .expectedNames(node: "mask1")))
    }

    @Test func anAnswerBeforeTheQuestionIsKeptAndOneAfterItIsRefused() {
        #expect(route("mask1.mask.png", mask: .blocked(.other("")), asked: false) == .keep)
        #expect(route("mask1.mask.png", mask: .blocked(.other("")), asked: false, answered: ["mask1"]) != .keep,
                "answered already: it runs, and is not asked again")
        #expect(route("mask1.mask.png", mask: .succeeded, asked: false) == .refuse(
            note: "mask1", reason: "'mask1' is not waiting for an answer (it is succeeded)",
            hint: .text("to answer it again, `flowdir rerun my-photo mask1` first")))
        #expect(route("blur1.out.png") == .refuse(
            note: "blur1", reason: "'blur1' is not waiting for an answer (it is blocked)",
            hint: .text("to answer it again, `flowdir rerun my-photo blur1` first")), "a node that never asks")
    }

    @Test func aFileForAFailedStepsOutputReplacesIt() {
        let failed = NodeState.failed(NodeError(summary: "exit 3", code: "exit(3)"))
        #expect(route("load1.out.png", load: failed) == .replace(node: "load1", expected: ExpectedFile(port: "out", type: .file, file: "load1.out.bin")))
        #expect(route("load1.out.png", load: .cancelled(reason: nil)) == .replace(node: "load1", expected: ExpectedFile(port: "out", type: .file, file: "load1.out.bin")))
        #expect(route("load1.out.png", settled: false, load: failed) == .pass, "not while it is being written")
        #expect(route("load1.other.png", load: failed) != .replace(node: "load1", expected: ExpectedFile(port: "other", type: .file, file: "load1.other.bin")),
                "only its own ports")
        if case .refuse = route("load1.out.png") {} else { Issue.record("a step that succeeded is not replaced this way: rerun it first") }
    }
}
