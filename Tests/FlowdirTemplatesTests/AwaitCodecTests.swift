import FlowdirCore
import FlowdirTemplates
import FlowdirTestSupport
import Testing

/// The await file: written as docs/instance-folder.md shows it, read back
/// to the same record, with whatever a person adds.
@Suite(.tags(.small)) struct AwaitCodecTests {
    func sample() -> AwaitRecord {
        var a = AwaitRecord(id: "4f1c", node: "mask1", type: .drawMask, title: "Draw a mask", detail: "Mask the subject: yes, all of it",
                            createdAt: Timestamp(iso8601: "2026-11-22T10:00:00Z")!, expiresAt: Timestamp(iso8601: "2026-11-23T10:00:00Z")!,
                            expects: [ExpectedFile(port: "mask", type: .mask, file: "mask1.mask.png")],
                            context: [ContextFile(name: "image", path: "nodes/load1/out/image.png")],
                            link: "flowdir://inst/node/mask1?await=4f1c")
        a.snoozeUntil = Timestamp(iso8601: "2026-11-22T11:00:00Z")
        a.snoozeCount = 1
        a.claim = AwaitClaim(by: "Ann Lee <ann@example.org>", until: Timestamp(iso8601: "2026-11-22T10:05:00Z")!)
        return a
    }

    @Test func writtenAsTheDesignShowsIt() {
        var a = sample()
        a.snoozeUntil = nil
        a.snoozeCount = 0
        a.claim = nil
        #expect(AwaitCodec.encode(a, instanceName: "my-photo") == """
            # Draw a mask — Mask the subject: yes, all of it
            # Answer: save a PNG as inbox/mask1.mask.png  (or: flowdir answer my-photo/mask1 FILE)
            # Unanswered by 2026-11-23T10:00:00Z, it fails (onTimeout: cancel).
            id: 4f1c
            node: mask1
            type: draw_mask
            title: Draw a mask
            detail: "Mask the subject: yes, all of it"
            urgency: normal
            createdAt: 2026-11-22T10:00:00Z
            expiresAt: 2026-11-23T10:00:00Z
            onTimeout: cancel
            skippable: false
            expects:
              mask: { type: MaskRef, file: mask1.mask.png }
            context:
              image: nodes/load1/out/image.png
            snooze: { until: null, count: 0 }
            claim: null
            link: flowdir://inst/node/mask1?await=4f1c

            """)
    }

    @Test func roundTrip() throws {
        let a = sample()
        let text = AwaitCodec.encode(a, instanceName: "x")
        #expect(try AwaitCodec.decode(Array(text.utf8), file: "a.yaml").get() == a)
        var done = a
        done.outcome = .expired
        done.doneAt = Timestamp(iso8601: "2026-11-23T10:00:00Z")
        done.doneBy = "flowdir"
        done.note = "failed: Expired"
        #expect(try AwaitCodec.decode(Array(AwaitCodec.encode(done, instanceName: "x").utf8), file: "a.yaml").get() == done)
    }

    @Test func readsWhatAPersonAdds() throws {
        var a = sample()
        a.type = .confirmParams
        a.params = [ParamEntry(key: "width", value: .int(1600))]
        let text = AwaitCodec.encode(a, instanceName: "x").replacingOccurrences(of: "width: 1600", with: "width: 800") + "approve: yes\n"
        let read = try AwaitCodec.decode(Array(text.utf8), file: "a.yaml").get()
        #expect(read.approve == true)
        #expect(read.params == [ParamEntry(key: "width", value: .int(800))])
        guard case .failure(let d) = AwaitCodec.decode(Array((text + "approve: [1]\n").utf8), file: "a.yaml") else {
            Issue.record("a duplicate key or a list for approve must not pass"); return
        }
        #expect(d.location?.line != nil)
    }
}
