//! A project: its files by path under one root folder, read from and written to a zip.
//! A zip read is bounded (its size, entries, each entry's size, all entries together,
//! path depth and length) and refused whole when an entry is a symbolic link, a path that
//! leaves the root or is not plain, or the entries are not all under one root: nothing of
//! a refused archive is used.

use std::collections::BTreeMap;
use std::io::{Cursor, Read as _, Write as _};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

/// Largest archive taken, bytes.
pub const MAX_ARCHIVE_BYTES: usize = 32 * 1024 * 1024;
/// Most entries an archive may hold.
pub const MAX_ENTRIES: usize = 1024;
/// Largest one entry may expand to, bytes.
pub const MAX_ENTRY_BYTES: u64 = 8 * 1024 * 1024;
/// Largest all entries together may expand to, bytes.
pub const MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;
/// Deepest path, in folders.
pub const MAX_DEPTH: usize = 8;
/// Longest path, bytes.
const MAX_PATH_BYTES: usize = 512;

/// A project's files, by path under its root (`Meta-information/api.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Project {
    /// The root folder's name (`<Name>-<Version>`).
    pub root: String,
    pub files: BTreeMap<String, Vec<u8>>,
}

/// Why an archive is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn refused(why: impl Into<String>) -> Refusal {
    Refusal(why.into())
}

impl Project {
    /// A project whose files go under `root`.
    pub fn new(root: &str) -> Self {
        Self {
            root: root.to_string(),
            files: BTreeMap::new(),
        }
    }

    /// Adds a file at `path` under the root.
    pub fn add(&mut self, path: &str, bytes: impl Into<Vec<u8>>) {
        self.files.insert(path.to_string(), bytes.into());
    }

    /// The file at `path` under the root, if any.
    pub fn file(&self, path: &str) -> Option<&[u8]> {
        self.files.get(path).map(Vec::as_slice)
    }

    /// The zip of the project: file entries only, under `<root>/`, as WSO2 writes them.
    pub fn to_zip(&self) -> std::io::Result<Vec<u8>> {
        let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
        let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
        for (path, bytes) in &self.files {
            zip.start_file(format!("{}/{path}", self.root), options)
                .map_err(std::io::Error::other)?;
            zip.write_all(bytes)?;
        }
        Ok(zip.finish().map_err(std::io::Error::other)?.into_inner())
    }

    /// The project a zip holds, within the bounds; folder entries are skipped.
    pub fn from_zip(bytes: &[u8]) -> Result<Self, Refusal> {
        if bytes.len() > MAX_ARCHIVE_BYTES {
            return Err(refused(format!(
                "The archive has {} bytes; at most {MAX_ARCHIVE_BYTES} are taken",
                bytes.len()
            )));
        }
        let mut archive = ZipArchive::new(Cursor::new(bytes))
            .map_err(|err| refused(format!("The archive is not a zip file: {err}")))?;
        if archive.len() > MAX_ENTRIES {
            return Err(refused(format!(
                "The archive has {} entries; at most {MAX_ENTRIES} are taken",
                archive.len()
            )));
        }
        let mut project = Project::default();
        let mut total = 0u64;
        for index in 0..archive.len() {
            let mut entry = archive
                .by_index(index)
                .map_err(|err| refused(format!("An entry of the archive cannot be read: {err}")))?;
            let name = entry.name().to_string();
            if entry.is_symlink() {
                return Err(refused(format!(
                    "The archive's entry '{}' is a symbolic link",
                    name.escape_default()
                )));
            }
            let (root, path) = split_path(&name)?;
            if project.root.is_empty() {
                project.root = root.to_string();
            } else if project.root != root {
                return Err(refused(
                    "The archive's entries are not all under one folder",
                ));
            }
            if entry.is_dir() || path.is_empty() {
                continue;
            }
            if entry.size() > MAX_ENTRY_BYTES {
                return Err(refused(format!(
                    "The archive's entry '{}' expands past {MAX_ENTRY_BYTES} bytes",
                    name.escape_default()
                )));
            }
            let mut contents = Vec::new();
            (&mut entry)
                .take(MAX_ENTRY_BYTES + 1)
                .read_to_end(&mut contents)
                .map_err(|err| {
                    refused(format!(
                        "The archive's entry '{name}' cannot be read: {err}"
                    ))
                })?;
            let read = contents.len() as u64;
            total += read;
            if read > MAX_ENTRY_BYTES || total > MAX_TOTAL_BYTES {
                return Err(refused(format!(
                    "The archive expands past {MAX_TOTAL_BYTES} bytes, or an entry past {MAX_ENTRY_BYTES}"
                )));
            }
            if project.files.insert(path.to_string(), contents).is_some() {
                return Err(refused(format!(
                    "The archive holds '{}' twice",
                    name.escape_default()
                )));
            }
        }
        if project.root.is_empty() {
            return Err(refused("The archive is empty"));
        }
        Ok(project)
    }
}

impl Project {
    /// The project a folder holds (its name the root), within the bounds a zip is read
    /// with; a symbolic link anywhere in it is refused.
    pub fn from_dir(folder: &std::path::Path) -> Result<Self, Refusal> {
        let root = folder
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| refused(format!("{} is not a project folder", folder.display())))?;
        let mut project = Project::new(root);
        let mut total = 0u64;
        let mut pending = vec![(folder.to_path_buf(), String::new())];
        while let Some((dir, prefix)) = pending.pop() {
            let entries = std::fs::read_dir(&dir)
                .map_err(|err| refused(format!("{} cannot be read: {err}", dir.display())))?;
            for entry in entries {
                let entry = entry.map_err(|err| refused(format!("{}: {err}", dir.display())))?;
                let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                    return Err(refused(format!(
                        "{} has a file name that is not UTF-8",
                        dir.display()
                    )));
                };
                let path = format!("{prefix}{name}");
                split_path(&format!("{root}/{path}"))?;
                let kind = entry
                    .file_type()
                    .map_err(|err| refused(format!("{path}: {err}")))?;
                if kind.is_symlink() {
                    return Err(refused(format!("'{path}' is a symbolic link")));
                }
                if kind.is_dir() {
                    pending.push((entry.path(), format!("{path}/")));
                    continue;
                }
                if !kind.is_file() {
                    return Err(refused(format!("'{path}' is not a regular file")));
                }
                let size = entry.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
                total = total.saturating_add(size);
                if size > MAX_ENTRY_BYTES || total > MAX_TOTAL_BYTES {
                    return Err(refused(format!(
                        "The project holds more than {MAX_TOTAL_BYTES} bytes, or a file past {MAX_ENTRY_BYTES}"
                    )));
                }
                if project.files.len() >= MAX_ENTRIES {
                    return Err(refused(format!(
                        "The project holds more than {MAX_ENTRIES} files"
                    )));
                }
                let bytes = std::fs::read(entry.path())
                    .map_err(|err| refused(format!("{path} cannot be read: {err}")))?;
                project.files.insert(path, bytes);
            }
        }
        Ok(project)
    }

    /// Writes the project's files under `folder/<root>/`, the folder made if need be.
    pub fn write_to(&self, folder: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
        let base = folder.join(&self.root);
        for (path, bytes) in &self.files {
            let target = base.join(path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(target, bytes)?;
        }
        Ok(base)
    }
}

/// An entry's name as its root folder and the path under it; refused unless every part
/// is a plain name (no `..`, `.`, empty part, backslash, drive or control character)
/// within the depth and length bounds.
fn split_path(name: &str) -> Result<(&str, &str), Refusal> {
    let outside = || {
        refused(format!(
            "The archive's entry '{}' is outside its folder or not a plain path",
            name.escape_default()
        ))
    };
    if name.len() > MAX_PATH_BYTES || name.starts_with('/') || name.contains('\\') {
        return Err(outside());
    }
    let trimmed = name.strip_suffix('/').unwrap_or(name);
    let parts: Vec<&str> = trimmed.split('/').collect();
    if parts.len() > MAX_DEPTH + 1 {
        return Err(refused(format!(
            "The archive's entry '{}' is nested deeper than {MAX_DEPTH} folders",
            name.escape_default()
        )));
    }
    let plain = |part: &&str| {
        !part.is_empty()
            && *part != "."
            && *part != ".."
            && !part.contains(':')
            && !part.chars().any(char::is_control)
    };
    if !parts.iter().all(plain) {
        return Err(outside());
    }
    let root = parts[0];
    let path = trimmed.get(root.len() + 1..).unwrap_or("");
    Ok((root, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
        for (name, bytes) in entries {
            if name.ends_with('/') {
                zip.add_directory(*name, SimpleFileOptions::default())
                    .unwrap();
            } else {
                zip.start_file(*name, SimpleFileOptions::default()).unwrap();
                zip.write_all(bytes).unwrap();
            }
        }
        zip.finish().unwrap().into_inner()
    }

    #[test]
    fn a_project_goes_out_and_comes_back_whole() {
        let mut project = Project::new("Pets-1.0.0");
        project.add("Meta-information/api.json", b"{}".to_vec());
        project.add("Docs/InlineContents/How to", b"text".to_vec());
        let back = Project::from_zip(&project.to_zip().unwrap()).unwrap();
        assert_eq!(back, project);
        // As apimcli re-zips a project: folder entries first, then files.
        let apimcli = zip_of(&[
            ("Pets-1.0.0/", b""),
            ("Pets-1.0.0/Meta-information/", b""),
            ("Pets-1.0.0/Meta-information/api.json", b"{}"),
        ]);
        let read = Project::from_zip(&apimcli).unwrap();
        assert_eq!(read.root, "Pets-1.0.0");
        assert_eq!(read.file("Meta-information/api.json"), Some(&b"{}"[..]));
    }

    #[test]
    fn hostile_archives_are_refused_whole() {
        for (entries, says) in [
            (vec![("Pets-1.0.0/../../etc/passwd", &b"x"[..])], "outside"),
            (vec![("/etc/passwd", &b"x"[..])], "outside"),
            (vec![("Pets-1.0.0/a\\..\\b", &b"x"[..])], "outside"),
            (vec![("Pets-1.0.0/C:/x", &b"x"[..])], "outside"),
            (vec![("Pets-1.0.0/./x", &b"x"[..])], "outside"),
            (
                vec![("A-1/x", &b"x"[..]), ("B-1/y", &b"y"[..])],
                "not all under one folder",
            ),
            (
                vec![("P-1/a/b/c/d/e/f/g/h/i/j", &b"x"[..])],
                "nested deeper",
            ),
        ] {
            let refusal = Project::from_zip(&zip_of(&entries)).unwrap_err();
            assert!(refusal.0.contains(says), "{entries:?}: {refusal}");
        }
        assert!(
            Project::from_zip(b"not a zip")
                .unwrap_err()
                .0
                .contains("not a zip")
        );
        assert!(
            Project::from_zip(&zip_of(&[]))
                .unwrap_err()
                .0
                .contains("empty")
        );
    }

    #[test]
    fn a_zip_bomb_is_refused_before_it_is_expanded() {
        let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .large_file(true);
        zip.start_file("Bomb-1/big", options).unwrap();
        let zeros = vec![0u8; 1024 * 1024];
        for _ in 0..9 {
            zip.write_all(&zeros).unwrap();
        }
        let bomb = zip.finish().unwrap().into_inner();
        assert!(bomb.len() < 64 * 1024, "deflated to {} bytes", bomb.len());
        let refusal = Project::from_zip(&bomb).unwrap_err();
        assert!(refusal.0.contains("expands past"), "{refusal}");
    }

    #[test]
    fn a_folder_is_read_as_its_zip_would_be_and_links_are_refused() {
        let dir = std::env::temp_dir().join(format!("apim-archive-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut project = Project::new("Pets-1.0.0");
        project.add("Meta-information/api.json", b"{}".to_vec());
        project.add("Docs/InlineContents/How to", b"text".to_vec());
        let folder = project.write_to(&dir).unwrap();
        assert_eq!(Project::from_dir(&folder).unwrap(), project);
        std::os::unix::fs::symlink("/etc/passwd", folder.join("Docs/link")).unwrap();
        let refusal = Project::from_dir(&folder).unwrap_err();
        assert!(refusal.0.contains("symbolic link"), "{refusal}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn symbolic_links_are_refused() {
        let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
        zip.add_symlink(
            "Pets-1.0.0/link",
            "/etc/passwd",
            SimpleFileOptions::default(),
        )
        .unwrap();
        let archive = zip.finish().unwrap().into_inner();
        let refusal = Project::from_zip(&archive).unwrap_err();
        assert!(refusal.0.contains("symbolic link"), "{refusal}");
    }
}
