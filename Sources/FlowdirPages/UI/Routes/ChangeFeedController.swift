import FlowdirCore
import HTTPTypes
import Hummingbird
import NIOCore

/// Live updates: `GET /api/events`, server-sent events, one `changed`
/// event per change (`{"instance": id}`, or null for the list) from the
/// change feed.
struct ChangeFeedController: Sendable {
    let feed: ChangeFeed
    let clock: FlowdirClock

    func addRoutes(to router: Router<UIContext>) {
        router.get("/api/events") { _, _ in events() }
    }

    /// A line per change; a comment every 15 s keeps proxies from closing
    /// the stream and finds pages that went.
    func events() -> Response {
        let changes = feed.subscribe()
        let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-cache"]
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            try await writer.write(ByteBuffer(string: "retry: 1000\n: connected\n\n"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                let (beats, beat) = AsyncStream.makeStream(of: String.self)
                let clock = self.clock
                group.addTask {
                    while !Task.isCancelled {
                        try await clock.sleep(for: .seconds(15))
                        beat.yield(": alive\n\n")
                    }
                }
                group.addTask {
                    for await change in changes {
                        let data = change.instance.map { "{\"instance\":\"\(RouteSupport.jsonEscape($0))\"}" } ?? "{\"instance\":null}"
                        beat.yield("event: changed\ndata: \(data)\n\n")
                    }
                    beat.finish()
                }
                for await text in beats { try await writer.write(ByteBuffer(string: text)) }
                group.cancelAll()
            }
            try await writer.finish(nil)
        })
    }
}
