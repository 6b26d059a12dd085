@testable import FlowdirCore
import FlowdirTestSupport
import Testing

@Suite(.tags(.small)) struct NodeMachineTests {
    @Test func theDocumentedPathIsAllowed() throws {
        var s = NodeState.blocked(.waitingFor(port: "image", node: "load1"))
        for e: NodeEvent in [.becomeReady, .enqueueRemote, .startRemote, .startDownload, .succeed] {
            s = try NodeMachine.apply(e, to: s).get()
        }
        #expect(s == .succeeded)
        #expect(try NodeMachine.apply(.startLocal, to: .ready).get() == .runningLocal)
        #expect(try NodeMachine.apply(.awaitUser, to: .ready).get() == .awaitingUser)
        #expect(try NodeMachine.apply(.block(.paramsChanged), to: .succeeded).get() == .blocked(.paramsChanged))
    }

    @Test func invalidMovesAreRejectedNotApplied() {
        let bad: [(NodeState, NodeEvent)] = [
            (.blocked(.offline(endpoint: "gpu", since: Timestamp(seconds: 1_800_000_000))), .startLocal), (.succeeded, .succeed), (.runningLocal, .becomeReady),
            (.ready, .succeed), (.failed(NodeError(summary: "x", code: "y")), .startLocal), (.cancelled(reason: nil), .cancel(reason: nil)),
            (.skipped, .succeed), (.runningLocal, .skip), (.queuedRemote, .startLocal),
        ]
        for (state, event) in bad {
            guard case .failure(let e) = NodeMachine.apply(event, to: state) else {
                Issue.record("\(state.name) by \(event) should be refused")
                continue
            }
            #expect(e.from == state)
        }
    }
}

@Suite(.tags(.small)) struct GatingTests {
    /// a → b → c, and d, with b's input optional from x.
    func graph(onChange: ChangePolicy = .block) -> WorkflowGraph {
        let tool = ToolDefinition(kind: "T", inputs: [PortSpec(name: "in", type: .file, optional: true)],
                                  outputs: [PortSpec(name: "out", type: .file)], run: .builtin, flexiblePorts: true)
        func node(_ id: String, _ inputs: [PortSpec]) -> NodeSpec {
            NodeSpec(id: id, kind: "T", inputs: inputs, outputs: [PortSpec(name: "out", type: .file)])
        }
        var t = WorkflowTemplate(name: "g", nodes: [
            node("a", []), node("b", [PortSpec(name: "in", type: .file)]), node("c", [PortSpec(name: "in", type: .file)]),
            node("x", []), node("y", [PortSpec(name: "opt", type: .file, optional: true)]),
        ], edges: [
            EdgeSpec(from: PortRef(node: "a", port: "out"), to: PortRef(node: "b", port: "in")),
            EdgeSpec(from: PortRef(node: "b", port: "out"), to: PortRef(node: "c", port: "in")),
            EdgeSpec(from: PortRef(node: "x", port: "out"), to: PortRef(node: "y", port: "opt")),
        ])
        t.options.onChange = onChange
        return TemplateValidator.validate(t) { _ in .found(tool) }.graph!
    }

    let now = Timestamp(seconds: 0)

    func facts(_ states: [String: NodeState], runs: [String: RunRecord] = [:], outputs: [String: String] = [:],
               params: [String: [ParamEntry]] = [:]) -> [String: NodeFacts] {
        var f: [String: NodeFacts] = [:]
        for (id, s) in states {
            f[id] = NodeFacts(state: NodeStateRecord(state: s, run: runs[id]?.run ?? 0, updatedAt: now), lastRun: runs[id],
                              params: params[id] ?? [], outputs: outputs[id].map { ["out": OutputRef(blob: $0, file: "nodes/\(id)/out/out.bin", run: 1)] } ?? [:])
        }
        return f
    }

    func run(_ id: String, inputs: [InputUse] = [], params: [ParamEntry] = []) -> RunRecord {
        RunRecord(run: 1, node: id, kind: "T", trigger: .auto, params: params, inputs: inputs, startedAt: now, host: "h", user: "u")
    }

    @Test func readyOnlyWhenEveryRequiredInputIsBound() {
        let g = graph()
        let start = facts(["a": .ready, "b": .blocked(.other("")), "c": .blocked(.other("")), "x": .ready, "y": .blocked(.other(""))])
        let changes = Dictionary(uniqueKeysWithValues: Gating.evaluate(g, facts: start).map { ($0.node, $0.state) })
        #expect(changes["b"] == .blocked(.waitingFor(port: "in", node: "a")))
        #expect(changes["c"] == .blocked(.waitingFor(port: "in", node: "b")))
        // An optional port with a producer waits for it…
        #expect(changes["y"] == .blocked(.waitingFor(port: "opt", node: "x")))
        // …and a failed or skipped producer leaves it absent.
        for producer: NodeState in [.failed(NodeError(summary: "no", code: "e")), .skipped] {
            let f = facts(["a": .ready, "b": .blocked(.other("")), "c": .blocked(.other("")), "x": producer, "y": .blocked(.other(""))])
            #expect(Gating.evaluate(g, facts: f).first { $0.node == "y" }?.state == .ready)
        }
    }

    @Test func upstreamFailureBlocksDescendantsByName() {
        let f = facts(["a": .failed(NodeError(summary: "no", code: "e")), "b": .blocked(.other("")), "c": .blocked(.other("")),
                       "x": .ready, "y": .blocked(.other(""))])
        let changes = Dictionary(uniqueKeysWithValues: Gating.evaluate(graph(), facts: f).map { ($0.node, $0.state) })
        #expect(changes["b"] == .blocked(.upstreamFailed(node: "a")))
        #expect(changes["c"] == .blocked(.upstreamFailed(node: "a")))
    }

    /// A pass from the touched nodes reaches every knock-on change, in
    /// graph order, each node once even when two paths lead to it.
    @Test func aTouchedPassSeesEveryKnockOnChangeOnce() {
        let tool = ToolDefinition(kind: "T", inputs: [PortSpec(name: "l", type: .file, optional: true), PortSpec(name: "r", type: .file, optional: true)],
                                  outputs: [PortSpec(name: "out", type: .file)], run: .builtin, flexiblePorts: true)
        func edge(_ a: String, _ b: String, _ port: String = "l") -> EdgeSpec {
            EdgeSpec(from: PortRef(node: a, port: "out"), to: PortRef(node: b, port: port))
        }
        // a diamond (a → b, c → d), then a chain d → e1 … e20.
        let ids = ["a", "b", "c", "d"] + (1...20).map { "e\($0)" }
        var edges = [edge("a", "b"), edge("a", "c"), edge("b", "d"), edge("c", "d", "r"), edge("d", "e1")]
        for i in 1..<20 { edges.append(edge("e\(i)", "e\(i + 1)")) }
        let inputs: [String: [PortSpec]] = ["d": [PortSpec(name: "l", type: .file), PortSpec(name: "r", type: .file)]]
        let t = WorkflowTemplate(name: "d", nodes: ids.map {
            NodeSpec(id: $0, kind: "T", inputs: $0 == "a" ? [] : inputs[$0] ?? [PortSpec(name: "l", type: .file)],
                     outputs: [PortSpec(name: "out", type: .file)])
        }, edges: edges)
        let g = TemplateValidator.validate(t) { _ in .found(tool) }.graph!
        var states = Dictionary(uniqueKeysWithValues: ids.map { ($0, NodeState.blocked(.other(""))) })
        states["a"] = .failed(NodeError(summary: "no", code: "e"))
        // As the engine marks a node that changed: it and its consumers.
        let changes = Gating.evaluate(g, facts: facts(states), touched: ["a", "b", "c"])
        #expect(changes.map(\.node) == Array(ids.dropFirst()))
        #expect(changes.allSatisfy { $0.state == .blocked(.upstreamFailed(node: "a")) })
        // From the middle, only what lies after it; an unknown name is no node.
        states = Dictionary(uniqueKeysWithValues: ids.map { ($0, NodeState.blocked(.upstreamFailed(node: "a"))) })
        states["e10"] = .skipped
        let later = Gating.evaluate(g, facts: facts(states), touched: ["e10", "e11", "nowhere"])
        #expect(later.map(\.node) == (11...20).map { "e\($0)" })
        #expect(later.first?.state == .blocked(.upstreamSkipped(node: "e10")))
        #expect(later.dropFirst().allSatisfy { c in c.state == .blocked(.waitingFor(port: "l", node: "e\(Int(c.node.dropFirst())! - 1)")) })
    }

    /// Ready nodes kept in order as they come and go read as the set sorted into graph order.
    @Test func readyNodesStayInGraphOrder() {
        let g = graph()
        var rng = SplitMix(seed: 11)
        var ready = ReadyNodes()
        var model: Set<String> = []
        for _ in 0..<500 {
            let id = ["a", "b", "c", "x", "y", "nowhere"].randomElement(using: &rng)!
            if Bool.random(using: &rng) {
                ready.insert(id, in: g)
                if id != "nowhere" { model.insert(id) }
            } else {
                ready.remove(id, in: g)
                model.remove(id)
            }
            #expect(ready.inOrder(g) == model.compactMap { g.position(of: $0) }.sorted().map { g.order[$0] })
            #expect(ready.count == model.count && ready.contains(id) == model.contains(id))
        }
    }

    /// A node blocked until its input's content is fetched is the
    /// engine's while that input is there; gating takes it back when not.
    @Test func blockedForAnInputsContentStaysTheEnginesWhileTheInputIsThere() {
        let g = graph()
        let notHere = NodeState.blocked(.inputNotHere(detail: "origin unreachable"))
        var f = facts(["a": .succeeded, "b": notHere, "c": .blocked(.other("")), "x": .ready, "y": .ready], outputs: ["a": "aaa"])
        #expect(Gating.evaluate(g, facts: f, touched: ["b"]).isEmpty)
        f = facts(["a": .ready, "b": notHere, "c": .blocked(.other("")), "x": .ready, "y": .ready])
        #expect(Gating.evaluate(g, facts: f, touched: ["b"]).first { $0.node == "b" }?.state == .blocked(.waitingFor(port: "in", node: "a")))
    }

    @Test func changedParamsAndChangedInputsButNeverSameBytes() {
        let g = graph()
        let bRun = run("b", inputs: [InputUse(port: "in", node: "a", sourcePort: "out", run: 1, blob: "aaa")],
                       params: [ParamEntry(key: "k", value: .int(4))])
        let base: [String: NodeState] = ["a": .succeeded, "b": .succeeded, "c": .succeeded, "x": .succeeded, "y": .succeeded]
        // Same bytes, same params (4 and 4.0 are the same number): nothing changes.
        var f = facts(base, runs: ["b": bRun], outputs: ["a": "aaa", "b": "bbb", "x": "xxx"], params: ["b": [ParamEntry(key: "k", value: .double(4.0))]])
        #expect(Gating.evaluate(g, facts: f).isEmpty)
        // New bytes upstream: the consumer that used the old ones is blocked.
        f = facts(base, runs: ["b": bRun], outputs: ["a": "NEW", "b": "bbb", "x": "xxx"], params: ["b": [ParamEntry(key: "k", value: .int(4))]])
        #expect(Gating.evaluate(g, facts: f).map(\.state) == [.blocked(.inputChanged(node: "a"))])
        // Edited params.
        f = facts(base, runs: ["b": bRun], outputs: ["a": "aaa", "b": "bbb", "x": "xxx"], params: ["b": [ParamEntry(key: "k", value: .int(5))]])
        #expect(Gating.evaluate(g, facts: f).map(\.state) == [.blocked(.paramsChanged)])
        // onChange: rerun makes it ready instead.
        #expect(Gating.evaluate(graph(onChange: .rerun), facts: f).map(\.state) == [.ready])
    }
}

@Suite(.tags(.small)) struct SchedulerTests {
    func req(_ i: String, _ n: String, _ c: ResourceClass = .local, touched: Double = 0) -> SlotRequest {
        SlotRequest(instance: i, node: n, resourceClass: c, touchedAt: Timestamp(seconds: touched))
    }

    @Test func capsHoldPerInstanceAndMachineWide() {
        let reqs = (1...5).map { req("A", "n\($0)") } + (1...5).map { req("A", "r\($0)", .remote) }
        let picked = Scheduler.select(reqs, running: ["A": [.local: 1]], instanceCaps: ["A": QueueCaps(local: 2, remote: 3)],
                                      machineCaps: QueueCaps(local: 8, remote: 8))
        #expect(picked.filter { $0.resourceClass == .local }.map(\.node) == ["n1"])
        #expect(picked.filter { $0.resourceClass == .remote }.map(\.node) == ["r1", "r2", "r3"])
    }

    /// One instance asking takes the short way; it picks what the way
    /// across instances picks, for any caps, use and mix of queues.
    @Test func oneInstancePicksAsTheWayAcrossInstancesDoes() {
        var rng = SplitMix(seed: 5)
        for _ in 0..<2_000 {
            let reqs = (0..<Int(rng.next() % 8)).map { req("A", "n\($0)", rng.next() % 3 == 0 ? .remote : .local) }
            var running: [String: [ResourceClass: Int]] = [:]
            for inst in ["A", "B"] where rng.next() % 2 == 0 {
                running[inst] = [.local: Int(rng.next() % 4), .remote: Int(rng.next() % 4)]
            }
            let caps = rng.next() % 2 == 0 ? ["A": QueueCaps(local: Int(rng.next() % 4), remote: Int(rng.next() % 5))] : [:]
            let machine = QueueCaps(local: Int(rng.next() % 5), remote: Int(rng.next() % 9))
            let short = Scheduler.select(reqs, running: running, instanceCaps: caps, machineCaps: machine)
            let across = Scheduler.selectAcross(reqs, running: running, instanceCaps: caps, machineCaps: machine)
            #expect(short == across, "\(reqs.map(\.node)) \(running) \(caps) \(machine)")
        }
    }

    @Test func mostRecentlyTouchedFirstThenRoundRobin() {
        let reqs = (1...3).map { req("old", "o\($0)", touched: 1) } + (1...3).map { req("new", "n\($0)", touched: 9) }
            + (1...3).map { req("mid", "m\($0)", touched: 5) }
        let picked = Scheduler.select(reqs, running: [:], instanceCaps: [:], machineCaps: QueueCaps(local: 5, remote: 8))
        #expect(picked.map(\.node) == ["n1", "m1", "o1", "n2", "m2"])
    }

    @Test func oneSlotAtATimeStillTakesTurns() {
        // With one slot, successive calls alternate: the instance served
        // longest ago goes first, the newest touched breaking ties.
        var served: [String: Int] = [:]
        var queues = ["A": ["a1", "a2", "a3"], "B": ["b1", "b2", "b3"]]
        var order: [String] = []
        for tick in 0..<6 {
            let reqs = queues.flatMap { instance, nodes in
                nodes.map { SlotRequest(instance: instance, node: $0, resourceClass: .local,
                                        touchedAt: Timestamp(seconds: instance == "B" ? 9 : 1), lastServed: served[instance]) }
            }
            let picked = Scheduler.select(reqs, running: [:], instanceCaps: [:], machineCaps: QueueCaps(local: 1, remote: 1))
            guard let p = picked.first else { break }
            order.append(p.node)
            served[p.instance] = tick
            queues[p.instance]?.removeFirst()
        }
        #expect(order == ["b1", "a1", "b2", "a2", "b3", "a3"])
    }
}

@Suite(.tags(.small)) struct GroupCommitDueTests {
    /// A 1,000-step run of ~1 ms jobs, two at a time, a change costing 25 µs to commit.
    func due(left: Int, held: Int, perChange: Double = 25e-6, job: Double = 1e-3, running: Int = 2) -> Bool {
        GroupCommit.isDue(nodesLeft: left, running: running, jobSeconds: job, heldChanges: held, secondsPerChange: perChange)
    }

    @Test func aHeldGroupGoesOnlyWhenTheRunIsAboutToEnd() {
        // Mid-run: 900 steps (~450 ms) left, a window's group (~600 changes, 15 ms to write): held.
        #expect(!due(left: 900, held: 600))
        // 20 steps (~10 ms) left: written now, while they run.
        #expect(due(left: 20, held: 600))
        // Just after: little held, still some left.
        #expect(!due(left: 18, held: 8))
        // Nothing left: whatever is held goes.
        #expect(due(left: 0, held: 1, perChange: 0))
    }

    @Test func durationsReadAsSeconds() {
        #expect(Duration.milliseconds(1500).seconds == 1.5)
        #expect(Duration.microseconds(-250).seconds == -0.00025)
        #expect(Duration.zero.seconds == 0)
    }

    @Test func withoutCostsNothingIsWrittenEarly() {
        #expect(!due(left: 5, held: 600, perChange: 0))
        #expect(!due(left: 5, held: 600, job: 0))
        #expect(!due(left: 0, held: 0))
    }
}
