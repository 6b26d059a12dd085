import FlowdirCore
import FlowdirTestSupport
import Testing

/// The await rules of docs/instance-folder.md ("inbox/") with a manual clock: time is a value
/// passed in, so each rule is checked at the exact second it changes.
@Suite(.tags(.small)) struct AwaitPolicyTests {
    let t0 = Timestamp(iso8601: "2026-11-22T10:00:00Z")!

    func question(type: AwaitType = .drawMask, expiresIn: Double? = 86_400, onTimeout: TimeoutPolicy = .cancel,
                  allowSkip: Bool? = nil, choices: [String] = [], defaultChoice: String? = nil,
                  params: [ParamEntry] = [], urgency: Urgency = .normal, at: Timestamp? = nil) -> AwaitRecord {
        let spec = AwaitSpec(type: type, urgency: urgency, expiresIn: expiresIn.map { FlowDuration(seconds: $0) },
                             notificationTitle: "Draw a mask", notificationBody: "Mask the subject for the next step.",
                             onTimeout: onTimeout, allowSkip: allowSkip, choices: choices, defaultChoice: defaultChoice)
        let node = ResolvedNode(spec: NodeSpec(id: "mask1", kind: "UserMaskEditor"), tool: nil,
                                inputs: [PortSpec(name: "image", type: .image)], outputs: [PortSpec(name: "mask", type: .mask)])
        return AwaitPolicy.make(id: "4f1c0000-aaaa", node: node, spec: spec, instanceID: "inst-1", now: at ?? t0,
                                context: [ContextFile(name: "image", path: "nodes/load1/out/image.png")], params: params)
    }

    @Test func madeAsTheDesignShowsIt() {
        let a = question()
        #expect(a.expects == [ExpectedFile(port: "mask", type: .mask, file: "mask1.mask.png")])
        #expect(a.expiresAt == t0 + 86_400)
        #expect(a.link == "flowdir://inst-1/node/mask1?await=4f1c0000-aaaa")
        #expect(AwaitPolicy.instructions(a, instanceName: "my-photo") == [
            "Draw a mask — Mask the subject for the next step.",
            "Answer: save a PNG as inbox/mask1.mask.png  (or: flowdir answer my-photo/mask1 FILE)",
            "Unanswered by 2026-11-23T10:00:00Z, it fails (onTimeout: cancel).",
        ])
    }

    @Test func snoozeDefaultsToAnHourAndStopsAtFive() throws {
        var a = question()
        for i in 1...5 {
            a = try AwaitPolicy.snooze(a, now: t0).get()
            #expect(a.snoozeCount == i)
            #expect(a.snoozeUntil == t0 + 3600)
        }
        #expect(throws: AwaitPolicy.Refusal.snoozeLimit(node: "mask1", count: 5)) { try AwaitPolicy.snooze(a, now: t0).get() }
        #expect(AwaitPolicy.section(a, now: t0 + 3599) == .snoozed)
        #expect(AwaitPolicy.section(a, now: t0 + 3600) == .pending)
        #expect(try AwaitPolicy.snooze(question(), for: 600, now: t0).get().snoozeUntil == t0 + 600)
    }

    @Test func skipOnlyWhenAllowed() {
        #expect(AwaitPolicy.skip(question()) == .notSkippable(node: "mask1"))
        #expect(AwaitPolicy.skip(question(allowSkip: true)) == nil)
        #expect(AwaitPolicy.skip(question(onTimeout: .skip)) == nil)  // a timeout that skips allows it
    }

    @Test func claimLeaseLapsesAfterFiveMinutes() throws {
        let a = try AwaitPolicy.claim(question(), by: "ann", now: t0).get()
        #expect(a.claim == AwaitClaim(by: "ann", until: t0 + 300))
        #expect(throws: AwaitPolicy.Refusal.claimed(node: "mask1", by: "ann", until: t0 + 300)) {
            try AwaitPolicy.claim(a, by: "bob", now: t0 + 299).get()
        }
        #expect(AwaitPolicy.heldByOther(a, who: "ann", now: t0 + 10) == nil)  // her own claim renews
        #expect(try AwaitPolicy.claim(a, by: "bob", now: t0 + 300).get().claim?.by == "bob")
    }

    /// An editor closed without an answer gives its claim up; another
    /// person's live claim is theirs to give up.
    @Test func aClaimIsReleasedOnlyByItsHolderWhileItLives() throws {
        let a = try AwaitPolicy.claim(question(), by: "ann", now: t0).get()
        #expect(try AwaitPolicy.release(a, by: "ann", now: t0 + 10).get().claim == nil)
        #expect(throws: AwaitPolicy.Refusal.self) { try AwaitPolicy.release(a, by: "bob", now: t0 + 10).get() }
        #expect(try AwaitPolicy.release(a, by: "bob", now: t0 + 300).get().claim == nil)
    }

    @Test func expiryPerPolicy() {
        let cancel = question(onTimeout: .cancel)
        #expect(!AwaitPolicy.isExpired(cancel, now: t0 + 86_399))
        #expect(AwaitPolicy.isExpired(cancel, now: t0 + 86_400))
        guard case .fail(let e) = AwaitPolicy.timeoutAction(cancel) else { Issue.record("cancel should fail"); return }
        #expect(e.summary == "Expired: no answer by 2026-11-23T10:00:00Z")
        #expect(AwaitPolicy.timeoutAction(question(onTimeout: .skip)) == .skip)
        let choice = question(type: .choice, onTimeout: .autoDefault, choices: ["warm", "cool"], defaultChoice: "cool")
        #expect(AwaitPolicy.timeoutAction(choice) == .choose("cool"))
        let single = question(type: .choice, onTimeout: .autoDefault, choices: ["only"])
        #expect(AwaitPolicy.timeoutAction(single) == .choose("only"))
        let params = [ParamEntry(key: "width", value: .int(1600))]
        #expect(AwaitPolicy.timeoutAction(question(type: .confirmParams, onTimeout: .autoDefault, params: params)) == .approve(params))
        guard case .fail = AwaitPolicy.timeoutAction(question(onTimeout: .autoDefault)) else {
            Issue.record("a file has no default"); return
        }
        #expect(!AwaitPolicy.isExpired(question(expiresIn: nil), now: t0 + 1e9))
    }

    @Test func pendingByUrgencyThenAge() {
        let old = question(urgency: .low, at: t0)
        let urgent = question(urgency: .blocking, at: t0 + 50)
        let normalOld = question(at: t0 + 10)
        let normalNew = question(at: t0 + 20)
        #expect([normalNew, old, urgent, normalOld].sorted(by: AwaitPolicy.pendingOrder).map(\.createdAt)
                == [t0 + 50, t0 + 10, t0 + 20, t0])
    }

    @Test func ageLineAndRetention() {
        var a = question()
        #expect(AwaitPolicy.ageLine(a, now: t0 + 300) == "added 5m ago · expires in 23h")
        a.doneAt = t0
        a.outcome = .answered
        #expect(AwaitPolicy.section(a, now: t0) == .done)
        #expect(!AwaitPolicy.isStale(a, now: t0 + 7 * 86_400))
        #expect(AwaitPolicy.isStale(a, now: t0 + 7 * 86_400 + 1))
    }
}

@Suite(.tags(.small)) struct AwaitLinkTests {
    @Test func roundTrip() throws {
        let link = AwaitLink(instanceID: "f468e9d4-c59a", node: "mask1", awaitID: "473f8c1e-39e5")
        #expect(link.text == "flowdir://f468e9d4-c59a/node/mask1?await=473f8c1e-39e5")
        #expect(try AwaitLink.parse(link.text).get() == link)
        #expect(try AwaitLink.parse("flowdir://abc/node/n1").get() == AwaitLink(instanceID: "abc", node: "n1", awaitID: nil))
    }

    @Test(arguments: [
        ("https://x/node/y", "it does not start with flowdir://"),
        ("flowdir://abc/mask1", "the path is not <instance-id>/node/<node>"),
        ("flowdir://abc/node/", "the node '' is empty or has odd characters"),
        ("flowdir://a b/node/n", "the instance id 'a b' is empty or has odd characters"),
        ("flowdir://abc/node/n?wait=1", "unknown query 'wait=1'"),
        ("flowdir://abc/node/n?await=", "the await id '' is empty or has odd characters"),
    ])
    func malformed(_ text: String, _ reason: String) {
        guard case .failure(let m) = AwaitLink.parse(text) else { Issue.record("\(text) should not parse"); return }
        #expect(m.reason == reason)
        #expect(m.description.hasSuffix("a link reads flowdir://<instance-id>/node/<node>?await=<id>"))
    }
}

@Suite(.tags(.small)) struct InboxNameTests {
    @Test(arguments: [
        ("mask1.mask.png", InboxName.answer(node: "mask1", port: "mask", ext: "png")),
        ("load1.image.tar.gz", .answer(node: "load1", port: "image", ext: "tar.gz")),
        ("mask1.mask", .answer(node: "mask1", port: "mask", ext: "")),
        ("mask1.await.yaml", .awaitFile(node: "mask1")),
        ("notes", .unexpected(prefix: "notes")),
        ("photo.png", .answer(node: "photo", port: "png", ext: "")),
        // Work files of editors, sync tools and flowdir itself are left alone.
        (".syncthing.mask1.mask.png.tmp", .ignored), ("mask1.mask.png.part", .ignored), ("4913", .ignored),
        ("mask1.await.yaml~", .ignored), ("sedAb12Cd", .ignored), (".mask1.mask.png.Xq12", .ignored),
        ("mask1.mask.png.rejected", .ignored), ("mask1.error.txt", .ignored), ("done", .ignored),
        (".mask1.await.yaml.swp", .ignored),
    ])
    func classify(_ name: String, _ expected: InboxName) {
        #expect(InboxName.classify(name) == expected)
    }
}

@Suite(.tags(.small)) struct AnswerCheckTests {
    let png: [UInt8] = SampleFiles.png()

    @Test func refusesWhatIsNotAFile() {
        func reason(_ kind: AnswerCheck.Kind, size: Int = 10) -> String? {
            if case .failure(let f) = AnswerCheck.check(.init(kind: kind, size: size), content: { [UInt8]() }, as: .mask) { return f.reason }
            return nil
        }
        #expect(reason(.symlink) == "it is a symbolic link; copy the file itself into inbox/")
        #expect(reason(.directory) == "it is a directory; drop a single file")
        #expect(reason(.device) == "it is a device, not a file")
        #expect(reason(.regular, size: 0) == "it is empty")
    }

    @Test func sizeLimitAndType() {
        let big = AnswerCheck.check(.init(kind: .regular, size: 2048), content: { png }, as: .mask, sizeLimit: 1024)
        #expect(big == .failure(.init("it is 2.0 KiB, more than the 1.0 KiB allowed (config: answerSizeLimit)")))
        #expect(AnswerCheck.check(.init(kind: .regular, size: png.count), content: { png }, as: .mask) == .success(.png))
        let truncated = Array(png.prefix(png.count - 12))
        guard case .failure = AnswerCheck.check(.init(kind: .regular, size: truncated.count), content: { truncated }, as: .mask) else {
            Issue.record("a truncated PNG must be refused"); return
        }
        let text = Array("hello".utf8)
        guard case .failure = AnswerCheck.check(.init(kind: .regular, size: 5), content: { text }, as: .image) else {
            Issue.record("text is not an image"); return
        }
    }

    @Test func choicesAndParams() {
        var a = AwaitRecord(id: "x", node: "look", type: .choice, title: "t", createdAt: Timestamp(seconds: 0), link: "")
        a.choices = ["warm", "cool"]
        #expect(AnswerCheck.choice(.string("cool"), of: a) == .success("cool"))
        #expect(AnswerCheck.choice(.string("hot"), of: a) == .failure(.init("'hot' is not one of the choices: warm, cool")))
        let offered = [ParamEntry(key: "width", value: .int(1600)), ParamEntry(key: "quality", value: .int(85))]
        #expect(AnswerCheck.params([ParamEntry(key: "width", value: .int(800))], offered: offered, schema: [])
                == .success([ParamEntry(key: "width", value: .int(800)), ParamEntry(key: "quality", value: .int(85))]))
        #expect(AnswerCheck.params([ParamEntry(key: "width", value: .string("big"))], offered: offered, schema: [])
                == .failure(.init("param 'width' must be a number, not string")))
        #expect(AnswerCheck.params([ParamEntry(key: "depth", value: .int(1))], offered: offered, schema: [])
                == .failure(.init("there is no param 'depth' to confirm (params: width, quality)")))
        let schema = [ParamSchema(name: "quality", type: .integer, min: 1, max: 100)]
        guard case .failure = AnswerCheck.params([ParamEntry(key: "quality", value: .int(101))], offered: offered, schema: schema) else {
            Issue.record("the schema's max holds"); return
        }
    }
}
