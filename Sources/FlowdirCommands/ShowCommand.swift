import ArgumentParser
import FlowdirCore
import FlowdirIO

/// `flowdir show <instance>`: the tool cards, in graph order.
struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show an instance's tool cards: state, why blocked, params, last run, progress."
    )

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    @Flag(help: "Print as JSON.")
    var json = false

    struct Card: Encodable {
        var id: String
        var kind: String
        var state: String
        var reason: String?
        var run: Int
        var progress: Double?
        var digest: String
        var resourceClass: String
        var updatedAt: String?
        var interactive: Bool
    }

    struct Report: Encodable {
        var id: String
        var title: String
        var path: String
        var template: String
        var status: String
        var steps: String
        var updatedAt: String?
        var archived: Bool
        var awaits: [String]
        var nodes: [Card]
    }

    func run() throws {
        let ctx = try Context.load()
        let path = try ctx.resolve(instance, root: root)
        let s = try ctx.reader.read(path)
        let cards = Self.cards(s)
        let summary = s.summary
        if json {
            return try Output.json(Report(id: s.record.id, title: s.record.title, path: path, template: s.record.template,
                                          status: summary.status.rawValue, steps: summary.steps,
                                          updatedAt: s.updatedAt?.iso8601, archived: s.record.archived,
                                          awaits: s.pendingAwaits, nodes: cards))
        }
        let t = ctx.terminal
        let now = ctx.clock.now()
        var head = t.paint(s.record.title, "1") + "  " + StatusStyle.paint(summary.status.rawValue, t) + " · \(summary.steps) steps"
        if let u = s.updatedAt { head += " · updated " + RelativeTime.describe(u, now: now) }
        if s.record.archived { head += " · archived" }
        Output.line(head)
        Output.line(t.paint("\(path) · id \(s.record.id) · from \(s.record.template)", "2"))
        if !s.workflow.isValid {
            Output.line()
            Output.line(t.paint("workflow.yaml is invalid; nothing will run until it is fixed:", "31"))
            let renderer = DiagnosticRenderer(sources: s.workflow.sources, useColor: t.colorOut)
            for d in s.workflow.diagnostics.errors.sortedByLocation() { Output.line(renderer.render(d)) }
        }
        Output.line()
        let idWidth = cards.map(\.id.count).max() ?? 0
        let kindWidth = cards.map(\.kind.count).max() ?? 0
        for card in cards {
            var line = Self.glyph(card.state, t) + " " + t.paint(card.id, "1") + String(repeating: " ", count: idWidth - card.id.count)
            line += "  " + card.kind + String(repeating: " ", count: kindWidth - card.kind.count) + "  "
            line += StatusStyle.paint(card.state, t)
            if let reason = card.reason { line += " — " + reason }
            if let p = card.progress { line += " · \(Int((p * 100).rounded()))%" }
            if card.run > 0 { line += t.paint(" · run \(card.run)", "2") }
            Output.line(line)
            var details: [String] = []
            if !card.digest.isEmpty { details.append(card.digest) }
            if card.resourceClass == "remote" { details.append("remote") }
            if card.interactive, card.state != "succeeded" { details.append("needs a person") }
            if !details.isEmpty { Output.line(String(repeating: " ", count: idWidth + 4) + t.paint(details.joined(separator: " · "), "2")) }
        }
        if !s.pendingAwaits.isEmpty {
            Output.line()
            Output.line("Waiting for you: " + s.pendingAwaits.map { "inbox/\($0)" }.joined(separator: ", "))
        }
    }

    static func cards(_ s: InstanceSnapshot) -> [Card] {
        let ids = s.graph?.order ?? s.states.keys.sorted()
        return ids.map { id in
            let node = s.graph?.node(id)
            let record = s.states[id]
            return Card(id: id, kind: node?.spec.kind ?? "?", state: record?.state.name ?? "unknown",
                        reason: record?.state.reason, run: record?.run ?? 0, progress: record?.progress,
                        digest: ParamDigest.make(s.params[id] ?? node?.spec.params ?? [], tool: node?.tool),
                        resourceClass: node?.resourceClass.rawValue ?? "local", updatedAt: record?.updatedAt.iso8601,
                        interactive: node?.awaitSpec != nil)
        }
    }

    static func glyph(_ state: String, _ t: Terminal) -> String {
        switch state {
        case "succeeded": t.paint("✓", "32")
        case "failed": t.paint("✗", "31")
        case "cancelled": t.paint("⊘", "31")
        case "skipped": t.paint("↷", "2")
        case "awaitingUser": t.paint("?", "33")
        case "ready": t.paint("○", "0")
        case "blocked": t.paint("·", "2")
        default: t.paint("●", "36")
        }
    }
}
