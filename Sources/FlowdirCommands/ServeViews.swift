import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// What the detail page shows beyond `show --json`: each card's words,
/// params with their schema, inputs, output tiles, its open question
/// (docs/serve.md).
enum ServeViews {
    /// `show --json`'s card, and the rest, side by side in one object.
    struct Card: Encodable {
        var card: ShowCommand.Card
        var label: String
        var params: [Param]
        var inputs: [Input]
        var outputs: [Output]
        var question: Question?
        /// The tool's presets: the params form's Presets menu.
        var presets: [Preset] = []

        enum Keys: String, CodingKey { case label, params, inputs, outputs, await, missing, presets }

        func encode(to encoder: any Encoder) throws {
            try card.encode(to: encoder)
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(label, forKey: .label)
            try c.encode(params, forKey: .params)
            try c.encode(inputs, forKey: .inputs)
            try c.encode(outputs, forKey: .outputs)
            try c.encode(question, forKey: .await)
            // The inputs it cannot run without yet: the Run button names them.
            try c.encode(inputs.filter { !$0.optional && !$0.ready }.map(\.port), forKey: .missing)
            try c.encode(presets, forKey: .presets)
        }
    }

    struct Preset: Encodable {
        var name: String
        var params: [String: JSONText]
    }

    /// An Action Center row: `flowdir inbox --json`'s item, and a thumbnail
    /// of what the question is about (its first image of context).
    struct InboxRow: Encodable {
        var item: InboxCommand.Item
        var preview: String?

        enum Keys: String, CodingKey { case preview }

        func encode(to encoder: any Encoder) throws {
            try item.encode(to: encoder)
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(preview, forKey: .preview)
        }
    }

    /// None of content not on this machine (its file is the pointer).
    static func preview(_ a: AwaitRecord, id: String, folder: String) -> String? {
        let image = a.context.first { c in
            !c.path.hasPrefix("/") && !c.path.split(separator: "/").contains("..")
                && ["png", "jpg", "jpeg", "webp"].contains(Path.fileExtension(c.path).lowercased())
                && AbsentContent.pointer(atFile: Path.join(folder, c.path)) == nil
        }
        return image.map { ServeBackend.url(id, "thumbs", $0.path) }
    }

    struct Param: Encodable {
        var name: String
        var type: String
        var value: JSONText?
        var `default`: JSONText?
        var options: [JSONText]?
        var min: Double?
        var max: Double?
        var description: String?
        var required: Bool
    }

    struct Input: Encodable {
        var port: String
        var type: String
        var from: String?
        var optional: Bool
        /// Whether what fills it is there: the step it comes from has succeeded.
        var ready: Bool
    }

    struct Output: Encodable {
        var port: String
        var type: String
        var file: String
        var size: Int
        var url: String
        var thumb: String?
        /// `not on this machine (12.3 MB)`, and how to get it (`show --json`'s words).
        var absent: String?
        var get: String?
    }

    struct Question: Encodable {
        struct Expected: Encodable { var port: String; var type: String; var file: String }
        struct Context: Encodable {
            var name: String
            var url: String
            var path: String
            /// As an output's: its content is not on this machine.
            var absent: String?
            var get: String?
        }
        var id: String
        var type: String
        var title: String
        var detail: String?
        var urgency: String
        var createdAt: String
        var expiresAt: String?
        var skippable: Bool
        var expects: [Expected]
        var context: [Context]
        var choices: [String]
        var defaultChoice: String?
        var params: [String: JSONText]
        var claimedBy: String?
        var snoozedUntil: String?
        var link: String
    }

    struct Run: Encodable {
        struct Change: Encodable { var key: String; var from: JSONText?; var to: JSONText? }
        var run: Int
        var trigger: String
        var startedAt: String
        var finishedAt: String?
        var exitCode: Int32?
        var error: String?
        var host: String
        var user: String
        /// user@host, as a card says who ran it.
        var who: String
        /// From start to finish; nil while it runs.
        var seconds: Double?
        var paramsDiff: [Change]
        /// What it made, each at the URL that serves this run's file (Compare, viewers).
        var outputs: [RunOutput]

        struct RunOutput: Encodable { var port: String; var type: String; var file: String; var size: Int; var url: String }
    }

    struct Template: Encodable {
        /// What `/api/new` is given: made from the template's real path, so it lasts across restarts.
        var id: String
        var path: String
        var name: String
        var valid: Bool

        static func id(of path: String) -> String {
            String(GitRepository.blobID(of: Array(path.utf8)).hex.prefix(12))
        }
    }

    /// A param's value as JSON (numbers stay numbers, text text).
    struct JSONText: Encodable {
        var value: ParamValue

        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            switch value {
            case .null: try c.encodeNil()
            case .bool(let b): try c.encode(b)
            case .int(let i): try c.encode(i)
            case .double(let d): try c.encode(d)
            case .string(let s): try c.encode(s)
            case .array(let items): try c.encode(items.map(JSONText.init))
            case .object(let entries):
                try c.encode(Dictionary(entries.map { ($0.key, JSONText(value: $0.value)) }, uniquingKeysWith: { _, last in last }))
            }
        }
    }

    static func card(_ card: ShowCommand.Card, snapshot s: InstanceSnapshot, id: String, question: AwaitRecord?, now: Timestamp) -> Card {
        let node = s.graph?.node(card.id)
        let values = s.params[card.id] ?? node.map { InstanceCodec.effectiveParams($0.spec.params, tool: $0.tool) } ?? []
        var params: [Param] = (node?.tool?.params ?? []).map { schema in
            Param(name: schema.name, type: schema.type.rawValue, value: values[key: schema.name].map { JSONText(value: $0.value) },
                  default: schema.defaultValue.map(JSONText.init), options: schema.allowed?.map(JSONText.init),
                  min: schema.min, max: schema.max, description: schema.description, required: schema.required)
        }
        // A param the tool does not declare (a tool that takes any) is shown as it is.
        for e in values where !params.contains(where: { $0.name == e.key }) {
            params.append(Param(name: e.key, type: e.value.typeName, value: JSONText(value: e.value), default: nil, options: nil,
                                min: nil, max: nil, description: nil, required: false))
        }
        let incoming = s.graph?.incoming[card.id] ?? [:]
        let inputs = (node?.inputs ?? []).map { port in
            Input(port: port.name, type: port.type.description, from: incoming[port.name].map { "\($0.from.node).\($0.from.port)" },
                  optional: port.optional, ready: incoming[port.name].map { s.states[$0.from.node]?.state == .succeeded } ?? false)
        }
        let outputs = (card.lastRun?.outputs ?? []).map { made in
            let rel = InstancePaths.node(card.id) + "/" + made.file
            // A video's tile shows its first frame.
            let image = [PortType.image, .mask, .video].map(\.description).contains(made.type)
            // No thumbnail of content that is not here: the tile says so instead.
            return Output(port: made.port, type: made.type, file: rel, size: made.size, url: ServeBackend.url(id, "files", rel),
                          thumb: image && made.absent == nil ? ServeBackend.url(id, "thumbs", rel) : nil, absent: made.absent, get: made.get)
        }
        let q = question.map { a in
            Question(id: a.id, type: a.type.rawValue, title: a.title, detail: a.detail, urgency: a.urgency.rawValue,
                     createdAt: a.createdAt.iso8601, expiresAt: a.expiresAt?.iso8601, skippable: a.skippable,
                     expects: a.expects.map { Question.Expected(port: $0.port, type: $0.type.description, file: $0.file) },
                     context: a.context.map { c in
                         // Only inside the instance (the file route refuses the rest anyway).
                         let inside = !c.path.hasPrefix("/") && !c.path.split(separator: "/").contains("..")
                         let pointer = inside ? AbsentContent.pointer(atFile: Path.join(s.path, c.path)) : nil
                         return Question.Context(name: c.name, url: ServeBackend.url(id, "files", c.path), path: c.path,
                                                 absent: pointer.map { AbsentContent.words(size: $0.size) },
                                                 get: pointer.map { _ in AbsentContent.getCommand(instance: s.path, relative: c.path) })
                     },
                     choices: a.choices, defaultChoice: a.defaultChoice,
                     params: Dictionary(a.params.map { ($0.key, JSONText(value: $0.value)) }, uniquingKeysWith: { _, last in last }),
                     claimedBy: a.claim.flatMap { now < $0.until ? $0.by : nil },
                     snoozedUntil: a.snoozeUntil.flatMap { now < $0 ? $0.iso8601 : nil }, link: a.link)
        }
        let presets = (node?.tool?.presets ?? []).map { p in
            Preset(name: p.name, params: Dictionary(p.params.map { ($0.key, JSONText(value: $0.value)) }, uniquingKeysWith: { _, last in last }))
        }
        return Card(card: card, label: label(card), params: params, inputs: inputs, outputs: outputs, question: q, presets: presets)
    }

    /// The state in words, as the card's chip says it (never colour alone).
    static func label(_ card: ShowCommand.Card) -> String {
        switch card.state {
        case "awaitingUser": "Needs your input"
        case "runningLocal", "runningRemote": "Running"
        case "queuedRemote": "Queued"
        case "downloading": "Downloading"
        case "succeeded": "Done"
        case "failed": "Failed"
        case "cancelled": "Cancelled"
        case "skipped": "Skipped"
        case "ready": "Ready"
        case "blocked": "Blocked" + (card.reason.map { ": " + $0 } ?? "")
        default: card.state
        }
    }

    /// Node `node`'s runs, newest first, each with what its params changed
    /// from the run before. `id`: the instance's, for the outputs' URLs.
    static func history(_ path: String, id: String, node: String, limit: Int) -> [Run] {
        let runs = Path.join(path, InstancePaths.node(node) + "/runs")
        let numbers = ((try? LocalFileSystem().listDirectory(runs)) ?? []).compactMap { Int($0) }.sorted()
        var records: [RunRecord] = []
        for n in numbers.suffix(limit + 1) {
            let file = runs + "/\(n)/run.yaml"
            guard let bytes = try? LocalFileSystem().readFile(file, limit: 1 << 20),
                  case .success(let r) = RunRecordCodec.decode(bytes, file: file) else { continue }
            records.append(r)
        }
        var out: [Run] = []
        for (i, r) in records.enumerated() where i > 0 || records.count <= limit {
            let before = i > 0 ? records[i - 1].params : []
            var diff: [Run.Change] = []
            for key in Set(before.map(\.key)).union(r.params.map(\.key)).sorted() {
                let from = before[key: key]?.value, to = r.params[key: key]?.value
                if from != to { diff.append(Run.Change(key: key, from: from.map(JSONText.init), to: to.map(JSONText.init))) }
            }
            let outputs = r.outputs.map { o in
                Run.RunOutput(port: o.port, type: o.type.description, file: o.file, size: o.size,
                              url: ServeBackend.url(id, "nodes", "\(node)/runs/\(r.run)/outputs/\(o.port)"))
            }
            out.append(Run(run: r.run, trigger: r.trigger.rawValue, startedAt: r.startedAt.iso8601, finishedAt: r.finishedAt?.iso8601,
                           exitCode: r.exitCode, error: r.error?.summary, host: r.host, user: r.user, who: "\(r.user)@\(r.host)",
                           seconds: r.finishedAt.map { max(0, $0.seconds - r.startedAt.seconds) },
                           paramsDiff: i == 0 ? [] : diff, outputs: outputs))
        }
        return out.reversed()
    }
}
