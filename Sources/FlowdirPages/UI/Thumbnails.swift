#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO

/// Makes a small PNG of an image or of a video's first frame (for list rows and output tiles).
public protocol Thumbnailer: Sendable {
    /// Writes a PNG at most `side` pixels wide and high of the image or
    /// video at `source`, whose bytes were checked to be `format` (PNG,
    /// JPEG, WebP; MP4, WebM, AVI), to `destination`; throws what went wrong.
    func thumbnail(of source: String, format: ContentFormat, to destination: String, side: Int) async throws(UIError)
}

/// ImageMagick's `convert`, which the example tools use too: told which
/// decoder to use (`png:file`), never left to guess from the bytes or the
/// name (an SVG or MVG would read other files, a delegate would run a program).
public struct ImageMagickThumbnailer: Thumbnailer {
    public init() {}

    public func thumbnail(of source: String, format: ContentFormat, to destination: String, side: Int) async throws(UIError) {
        if let demuxer = Self.demuxer(format) { return try await videoFrame(of: source, demuxer: demuxer, to: destination, side: side) }
        guard let decoder = Self.decoder(format) else { throw UIError(415, "no thumbnail of a \(format.rawValue) file") }
        // Bounds on what one picture may take (a small file can claim a huge canvas).
        let limits = ["-limit", "width", "16KP", "-limit", "height", "16KP", "-limit", "area", "128MP", "-limit", "memory", "256MiB",
                      "-limit", "disk", "1GiB", "-limit", "time", "60"]
        // `[0]`: the first frame.
        let r = await CommandOutput.run(["convert"] + limits + [decoder + ":" + source + "[0]", "-auto-orient", "-thumbnail", "\(side)x\(side)>",
                                                                "png:" + destination])
        guard r.status == 0 else {
            if r.status == 127 { throw UIError(501, "no thumbnail: ImageMagick's convert is not installed", hint: "apt install imagemagick") }
            throw UIError(415, "no thumbnail: ImageMagick could not read it as \(format.rawValue.uppercased())")
        }
    }

    /// A video's first frame, by ffmpeg, told which demuxer to use: never
    /// one that reads other files (a playlist, `concat`), only local files
    /// (`-protocol_whitelist file`), and no more than a minute.
    func videoFrame(of source: String, demuxer: String, to destination: String, side: Int) async throws(UIError) {
        let r = await CommandOutput.run(["timeout", "60", "ffmpeg", "-nostdin", "-v", "error", "-protocol_whitelist", "file", "-f", demuxer, "-i", "file:" + source,
                                         "-frames:v", "1", "-vf", "scale=w=\(side):h=\(side):force_original_aspect_ratio=decrease",
                                         "-f", "image2", "-update", "1", "-c:v", "png", "-y", "file:" + destination])
        guard r.status == 0, Files.exists(destination) else {
            if r.status == 127 { throw UIError(501, "no thumbnail of a video: ffmpeg is not installed", hint: "apt install ffmpeg") }
            throw UIError(415, "no thumbnail: ffmpeg could not read its first frame")
        }
    }

    static func demuxer(_ format: ContentFormat) -> String? {
        switch format {
        case .mp4: "mov"
        case .webm: "matroska"
        case .avi: "avi"
        default: nil
        }
    }

    static func decoder(_ format: ContentFormat) -> String? {
        switch format {
        case .png: "png"
        case .jpeg: "jpeg"
        case .webp: "webp"
        default: nil
        }
    }
}

/// Thumbnails made once per blob and kept in the instance's
/// `.flowdir/thumbs/` (never committed): the same bytes under another
/// name, or in a later run, are not made again. Together they take at most
/// `limit` bytes (`storage: { thumbnails: 200MB }`, docs/storage.md): once
/// over it, the least recently used go first. When each was last used is
/// its file's modification time, so that it outlives the server.
public struct ThumbnailCache: Sendable {
    public static let side = 320
    public static let defaultLimit = 200 << 20
    let maker: any Thumbnailer
    let limit: Int
    /// The blob of a file as last read (by path, size and mtime): a list of
    /// a thousand rows does not hash a thousand images each time.
    let blobs = Locked([String: (stamp: FileStamp, blob: ObjectID)]())
    /// The thumbnails kept, in every instance whose folder was looked in.
    let kept = Locked(Kept())

    struct Kept {
        /// Thumbnail path → its size and when it was last used (seconds).
        var files: [String: (size: Int, used: Double)] = [:]
        var total = 0
        /// Thumbnail folders read from disk (once each).
        var scanned: Set<String> = []

        mutating func put(_ path: String, size: Int, used: Double) {
            total += size - (files[path]?.size ?? 0)
            files[path] = (size, used)
        }

        mutating func remove(_ path: String) {
            if let old = files.removeValue(forKey: path) { total -= old.size }
        }
    }

    public init(maker: any Thumbnailer = ImageMagickThumbnailer(), limit: Int = ThumbnailCache.defaultLimit) {
        self.maker = maker
        self.limit = limit
    }

    /// The thumbnail's path for the file at `path` (made now if new).
    public func thumbnail(instance: String, path: String) async throws(UIError) -> String {
        guard let stamp = FileStamp.of(path) else { throw UIError(404, "no such file") }
        // By content, before anything reads it: PNG, JPEG or WebP, whole; else MP4, WebM or AVI.
        let format: ContentFormat
        do {
            format = try ContentCheck.check(try FileByteSource(path: path), as: .image)
        } catch let e as ContentCheck.Failure {
            // A video whose first frame ffmpeg can take (an animated GIF counts as a video, but has no demuxer here).
            guard let video = try? ContentCheck.check(try FileByteSource(path: path), as: .video),
                  ImageMagickThumbnailer.demuxer(video) != nil else { throw UIError(415, "no thumbnail: \(e.reason)") }
            format = video
        } catch {
            throw UIError(404, "cannot read the file")
        }
        var blob = blobs.locked { $0[path] }.flatMap { $0.stamp == stamp ? $0.blob : nil }
        if blob == nil {
            // Hashed as it is read, a piece at a time (an image may be large).
            guard let id = try? ContentStore(gitDirectory: instance + "/.git").digest(ofFile: path).blob else {
                throw UIError(404, "cannot read the file")
            }
            blobs.locked { $0[path] = (stamp, id) }
            blob = id
        }
        let folder = instance + "/" + InstancePaths.local + "/thumbs"
        scan(folder)
        let thumb = folder + "/" + blob!.hex + ".png"
        if Files.exists(thumb) {
            used(thumb)
            return thumb
        }
        do { try Files.makeDirectories(folder) } catch {
            throw UIError(500, "cannot make \(folder) for thumbnails", hint: "check that the instance's folder is writable")
        }
        let partial = folder + "/." + blob!.hex + "." + RandomID.uuid() + ".png"
        do {
            try await maker.thumbnail(of: path, format: format, to: partial, side: Self.side)
        } catch {
            unlink(partial)
            throw error
        }
        guard rename(partial, thumb) == 0 else {
            unlink(partial)
            throw UIError(500, "cannot keep the thumbnail in \(folder)")
        }
        var st = stat()
        let size = stat(thumb, &st) == 0 ? Int(st.st_size) : 0
        kept.locked { $0.put(thumb, size: size, used: Self.now()) }
        trim(keeping: thumb)
        return thumb
    }

    /// Reads what a thumbnail folder holds, the first time it is used.
    func scan(_ folder: String) {
        guard kept.locked({ $0.scanned.insert(folder).inserted }) else { return }
        let found = ((try? LocalFileSystem().listDirectoryWithStatus(folder)) ?? []).compactMap { (name, st) -> (String, Int, Double)? in
            // Only finished thumbnails (`<blob>.png`); a partial one is `.<blob>.<uuid>.png`.
            guard !name.hasPrefix("."), name.hasSuffix(".png"), st.st_mode & S_IFMT == S_IFREG else { return nil }
            return (folder + "/" + name, Int(st.st_size), Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9)
        }
        kept.locked { k in for (path, size, used) in found where k.files[path] == nil { k.put(path, size: size, used: used) } }
        trim(keeping: nil)
    }

    /// Marks a thumbnail used now, in memory and on disk (its mtime; at most
    /// once a minute per thumbnail: a list page asks for many at once).
    func used(_ thumb: String) {
        let now = Self.now()
        let stale = kept.locked { k -> Bool in
            guard let e = k.files[thumb] else {
                var st = stat()
                k.put(thumb, size: stat(thumb, &st) == 0 ? Int(st.st_size) : 0, used: now)
                return true
            }
            k.files[thumb] = (e.size, now)
            return now - e.used >= 60
        }
        if stale { utimensat(AT_FDCWD, thumb, nil, 0) }
    }

    /// Drops the least recently used thumbnails until the rest fit in
    /// `limit` (never `keeping`, the one just made).
    func trim(keeping: String?) {
        let drop = kept.locked { k -> [String] in
            guard k.total > limit else { return [] }
            var out: [String] = []
            for (path, _) in k.files.sorted(by: { $0.value.used < $1.value.used }) where path != keeping {
                guard k.total > limit else { break }
                k.remove(path)
                out.append(path)
            }
            return out
        }
        for path in drop { unlink(path) }
    }

    static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
