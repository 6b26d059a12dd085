import ArgumentParser
import FlowdirCore
import FlowdirIO

/// `flowdir inbox [ROOT]`: the Action Center.
struct InboxCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inbox",
        abstract: "The Action Center: every question for a person, Pending, Snoozed and Done, by instance.",
        discussion: "Pending is sorted by urgency, then age. Done keeps the last 7 days."
    )

    @Argument(help: "Where to look (default: the config's roots, or the current folder).", completion: .directory)
    var root: String?

    @Flag(help: "Print as JSON.")
    var json = false

    struct Item: Encodable {
        var instance: String
        var instanceId: String
        var title: String
        var node: String
        var id: String
        var type: String
        var question: String
        var urgency: String
        var skippable: Bool
        var section: String
        var createdAt: String
        var expiresAt: String?
        var snoozedUntil: String?
        var claimedBy: String?
        var file: String
        var answer: [String]
        var link: String
        var outcome: String?
        var doneAt: String?
        var doneBy: String?
    }

    func run() throws {
        let ctx = try Context.load()
        let now = ctx.clock.now()
        let (items, problems) = Self.items(ctx, paths: InstanceListing.paths(ctx, root: root), now: now)
        if json { return try Output.json(items.map(\.0)) }
        for p in problems { Output.error(p) }
        let t = ctx.terminal
        // Text from the instances' files is shown, never obeyed, one line each (see `TerminalText`).
        let text = TerminalText.oneLine
        if items.allSatisfy({ $0.0.section == AwaitPolicy.Section.done.rawValue }) {
            Output.line("You're all set: nothing is waiting for you under \(ctx.roots(root).joined(separator: ", ")).")
        }
        for section in AwaitPolicy.Section.allCases {
            let list = items.filter { $0.0.section == section.rawValue }
            guard !list.isEmpty else { continue }
            Output.line()
            Output.line(t.paint("\(section.rawValue) (\(list.count))", "1"))
            // Grouped by instance, in the order of their first item.
            var order: [String] = []
            for (item, _) in list where !order.contains(item.instance) { order.append(item.instance) }
            for instance in order {
                let group = list.filter { $0.0.instance == instance }
                Output.line("  " + t.paint(text(group[0].0.title), "1") + t.paint("  " + text(instance), "2"))
                for (item, a) in group {
                    let mark = a.urgency == .blocking ? t.paint("!", "31") + " " : "  "
                    Output.line("  \(mark)\(text(item.node)): " + text(item.question))
                    if section == .done {
                        Output.line("      \(text(item.outcome ?? "done"))" + (a.doneAt.map { " " + RelativeTime.describe($0, now: now) } ?? "")
                                    + (item.doneBy.map { " by " + text($0) } ?? "") + (a.outcome == .answered ? "" : a.note.map { " · " + text($0) } ?? ""))
                    } else {
                        Output.line("      " + text(AwaitPolicy.ageLine(a, now: now)))
                        Output.line("      answer: " + text(a.expects.isEmpty ? "edit \(Shell.quote(item.file))" : item.answer.map(Shell.quote).joined(separator: ", ")))
                        Output.line("      " + t.paint(text(item.link), "2"))
                    }
                }
            }
        }
    }

    /// Every question under `paths`, in the Action Center's order, and the await files that could not be read.
    static func items(_ ctx: Context, paths: [String], now: Timestamp) -> (items: [(Item, AwaitRecord)], problems: [String]) {
        var items: [(Item, AwaitRecord)] = []
        var problems: [String] = []
        for path in paths {
            guard let awaits = try? ctx.reader.awaits(path) else { continue }
            problems += awaits.problems
            for (file, a) in awaits.open + awaits.done {
                let section = AwaitPolicy.section(a, now: now)
                if section == .done, AwaitPolicy.isStale(a, now: now) { continue }
                let answer = a.outcome != nil ? [] : a.expects.isEmpty ? [file] : a.expects.map { Path.join(path, "inbox/" + $0.file) }
                items.append((Item(instance: path, instanceId: awaits.record.id, title: awaits.record.title, node: a.node, id: a.id, type: a.type.rawValue,
                                   question: a.title + (a.detail.map { " — \($0)" } ?? ""), urgency: a.urgency.rawValue, skippable: a.skippable,
                                   section: section.rawValue, createdAt: a.createdAt.iso8601, expiresAt: a.expiresAt?.iso8601,
                                   snoozedUntil: section == .snoozed ? a.snoozeUntil?.iso8601 : nil,
                                   claimedBy: a.claim.flatMap { now < $0.until ? $0.by : nil }, file: file, answer: answer,
                                   link: a.link, outcome: a.outcome?.rawValue, doneAt: a.doneAt?.iso8601, doneBy: a.doneBy), a))
            }
        }
        items.sort { l, r in
            if l.0.section != r.0.section {
                return AwaitPolicy.Section.allCases.firstIndex { $0.rawValue == l.0.section }! < AwaitPolicy.Section.allCases.firstIndex { $0.rawValue == r.0.section }!
            }
            if l.0.section == AwaitPolicy.Section.done.rawValue { return (l.1.doneAt ?? now) > (r.1.doneAt ?? now) }
            return AwaitPolicy.pendingOrder(l.1, r.1)
        }
        return (items, problems)
    }
}
