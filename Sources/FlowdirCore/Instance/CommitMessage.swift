/// A state change of one node, as a commit trailer records it:
/// `Flowdir-Transition: mask1 awaitingUser→succeeded run=1`.
public struct Transition: Hashable, Sendable, CustomStringConvertible {
    public var node: String
    public var from: String?
    public var to: String
    public var run: Int

    public init(node: String, from: String?, to: String, run: Int) {
        self.node = node
        self.from = from
        self.to = to
        self.run = run
    }

    public var description: String {
        var out = ""
        write(to: &out)
        return out
    }

    /// The trailer's text, appended in place (a group commit writes hundreds).
    func write(to out: inout String) {
        out += PlainText.escapingControls(node)
        out += " "
        if let from { out += from }
        out += "→"
        out += to
        out += " run="
        out += String(run)
    }

    public init?(trailer: String) {
        let parts = trailer.split(separator: " ")
        guard parts.count == 3, let arrow = parts[1].firstIndex(of: "→"), parts[2].hasPrefix("run="),
              let run = Int(parts[2].dropFirst(4)) else { return nil }
        let from = String(parts[1][..<arrow])
        self.init(node: String(parts[0]), from: from.isEmpty ? nil : from,
                  to: String(parts[1][parts[1].index(after: arrow)...]), run: run)
    }
}

/// A commit message: a line for `git log --oneline`, then trailers for
/// machines (docs/engine.md, "Commits").
public struct CommitMessage: Hashable, Sendable {
    public var summary: String
    public var event: String
    public var transitions: [Transition]
    public var body: String?

    public init(summary: String, event: String, transitions: [Transition] = [], body: String? = nil) {
        self.summary = summary
        self.event = event
        self.transitions = transitions
        self.body = body
    }

    public var text: String {
        // A group commit of a run carries a trailer for each of its steps'
        // moves (hundreds): appended in place, not interpolated line by line.
        var out = ""
        out.reserveCapacity(summary.utf8.count + (body?.utf8.count ?? 0) + event.utf8.count + 24 + 48 * transitions.count)
        // Escaped here, where every message is written: a name or reason with
        // a line break would otherwise make a trailer (or a subject) of the rest.
        out += PlainText.oneLine(summary, limit: 400)
        out += "\n\n"
        if let body, !body.isEmpty {
            // Its lines kept, none of them read back as a trailer.
            out += PlainText.lines(body).split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.hasPrefix("Flowdir-") ? " " + $0 : $0 }.joined(separator: "\n")
            out += "\n\n"
        }
        out += "Flowdir-Event: "
        out += PlainText.oneLine(event)
        out += "\n"
        for t in transitions {
            out += "Flowdir-Transition: "
            t.write(to: &out)
            out += "\n"
        }
        return out
    }

    /// Reads a message back; `nil` for a commit flowdir did not make.
    public init?(parsing text: String) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let summary = lines.first else { return nil }
        var event: String?
        var transitions: [Transition] = []
        var body: [String] = []
        for line in lines.dropFirst() {
            if line.hasPrefix("Flowdir-Event: ") {
                event = String(line.dropFirst(15))
            } else if line.hasPrefix("Flowdir-Transition: ") {
                if let t = Transition(trailer: String(line.dropFirst(20))) { transitions.append(t) }
            } else if event == nil {
                body.append(line)
            }
        }
        guard let event else { return nil }
        let bodyText = body.joined(separator: "\n").trimmed()
        self.init(summary: summary, event: event, transitions: transitions, body: bodyText.isEmpty ? nil : bodyText)
    }
}
