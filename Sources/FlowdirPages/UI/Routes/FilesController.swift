import FlowdirCore
import FlowdirIO
import HTTPTypes
import Hummingbird

/// An instance's files, for viewers and downloads (streamed, with `Range`),
/// and thumbnails of its images; GET and HEAD. Never `.git/`, `.flowdir/`,
/// `..`, nor anything a link leads out of the folder to (docs/security.md).
struct FilesController: Sendable {
    let backend: any UIBackend
    let thumbnails: ThumbnailCache

    func addRoutes(to router: Router<UIContext>) {
        let instance = router.group("/api/instances/:id")
        // HEAD too: the length and headers a GET would have, without the bytes.
        instance.get("files/**", use: file)
        instance.head("files/**") { request, context throws(UIError) in try await file(request, context: context).createHeadResponse() }
        instance.get("thumbs/**", use: thumbnail)
        instance.head("thumbs/**") { request, context throws(UIError) in try await thumbnail(request, context: context).createHeadResponse() }
        // Any run's output, by its record (the run history's views and Compare).
        let output = "nodes/:node/runs/:run/outputs/:port"
        instance.get(RouterPath(output), use: runOutput)
        instance.head(RouterPath(output)) { request, context throws(UIError) in try await runOutput(request, context: context).createHeadResponse() }
    }

    @Sendable func runOutput(_ request: Request, context: UIContext) async throws(UIError) -> Response {
        let id = try RouteSupport.param(context, "id")
        let node = try RouteSupport.nodeParam(context)
        guard let run = Int(try RouteSupport.param(context, "run")), run >= 1 else { throw UIError(404, "runs are numbered from 1") }
        let port = try RouteSupport.param(context, "port")
        guard RouteSupport.isPlainName(port) else { throw UIError(404, "no such port") }
        let served: ServedFile
        switch try await backend.runOutput(id, node: node, run: run, port: port) {
        case .file(let path, let name): served = try ServedFile(path, name: name)
        case .bytes(let bytes, let name): served = try ServedFile(bytes: bytes, name: name)
        }
        if let p = served.pointer {
            throw UIError(404, "output '\(port)' of run \(run) of '\(node)' is \(AbsentContent.words(size: p.size))",
                          hint: "get it with `flowdir storage get`, or `flowdir sync` from the machine that made it")
        }
        return served.response(range: Self.range(request))
    }

    @Sendable func file(_ request: Request, context: UIContext) async throws(UIError) -> Response {
        let (folder, path) = try locate(context)
        let served = try ServedFile(path)
        if let p = served.pointer { throw Self.absent(p, folder: folder, path: path) }
        return served.response(range: Self.range(request))
    }

    @Sendable func thumbnail(_ request: Request, context: UIContext) async throws(UIError) -> Response {
        let (folder, path) = try locate(context)
        if let p = AbsentContent.pointer(atFile: path) { throw Self.absent(p, folder: folder, path: path) }
        let thumb = try ServedFile(try await thumbnails.thumbnail(instance: folder, path: path))
        return thumb.response(range: Self.range(request), type: ServedType(contentType: "image/png", inline: true), cache: true)
    }

    /// The instance's folder and the file's real path, by the URL's
    /// relative path (each segment percent-encoded, as the pages spell them).
    func locate(_ context: UIContext) throws(UIError) -> (folder: String, path: String) {
        let folder = try backend.folder(of: try RouteSupport.param(context, "id"))
        let parts = context.parameters.getCatchAll().map { RouteSupport.percentDecoded(String($0)) }
        guard !parts.isEmpty, parts.allSatisfy({ $0 != nil }) else { throw UIError(404, "no such file in the instance") }
        let names = parts.compactMap { $0 }
        guard names.allSatisfy({ RouteSupport.isPlainName($0) && !$0.contains("\0") }),
              names[0] != ".git", names[0] != InstancePaths.local else {
            throw UIError(404, "no such file in the instance")
        }
        let path = folder + "/" + names.joined(separator: "/")
        // Where a link inside the instance leads counts too: not out of it, nor into .git/ or .flowdir/.
        guard let real = Files.realPath(path), let base = Files.realPath(folder), real.hasPrefix(base + "/"),
              !InstancePaths.isPrivate(String(real.dropFirst(base.count + 1))) else {
            throw UIError(404, "no such file in the instance")
        }
        return (folder, real)
    }

    /// The `Range` a request asks for, unless `If-Range` makes it
    /// conditional: files are sent with no validator for it to match, so
    /// such a request gets the whole file, as RFC 9110 says.
    static func range(_ request: Request) -> String? {
        request.headers[.ifRange] == nil ? request.headers[.range] : nil
    }

    /// A file whose content is not on this machine (its working file is the
    /// pointer): said so, with its size and how to get it, never served as
    /// the pointer's text (docs/storage.md).
    static func absent(_ p: LFSPointer, folder: String, path: String) -> UIError {
        let base = Files.realPath(folder) ?? folder
        let relative = path.hasPrefix(base + "/") ? String(path.dropFirst(base.count + 1)) : Path.basename(path)
        return UIError(404, "\(relative) is \(AbsentContent.words(size: p.size))",
                       hint: "get it with `\(AbsentContent.getCommand(instance: folder, relative: relative))`")
    }
}
