"""cachedir: a mirror is keyed by the URL and the credentials used, public URLs share one
mirror, no secret appears in a path, and the layout without a credential key is never read."""

import hashlib

import pytest

from agent.source import cachedir, mirror as source, snapshot as snapshots

URL = "https://git.example.com/org/apps.git"
SSH = "ssh://git@git.example.com/org/apps.git"
TOKEN = "ghp_secret-token-0042"


def path(url, credentials=None, cache="/c"):
    return source.cache_path(cache, url, credentials)


def key_file(tmp_path, name, content):
    file = tmp_path / name
    file.write_text(content)
    return str(file)


@pytest.mark.parametrize("url, expected", [
    ("https://h/x.git", "http"), ("HTTP://h/x.git", "http"), ("ssh://h/x.git", "ssh"),
    ("git+ssh://h/x.git", "ssh"), ("ssh+git://h/x.git", "ssh"), ("git@h:x.git", "ssh"), ("h:x.git", "ssh"),
    ("file:///srv/x.git", "file"), ("/srv/x.git", "file"), ("./x", "file"), ("a/b:c", "file"),
    ("git://h/x.git", "git"), ("ext::ssh h git-upload-pack x", "other"), ("s3://bucket/x", "other"),
])
def test_transport_as_git_reads_the_url(url, expected):
    assert cachedir.transport(url) == expected


def test_no_credentials_one_mirror_per_url_and_the_old_layout_is_not_it():
    anonymous = path(URL)
    assert anonymous == path(URL, source.Credentials()) == path(URL, source.Credentials(username="alice"))
    assert anonymous.name == hashlib.sha256(URL.encode()).hexdigest()[:16] + "-anon.git"
    assert anonymous.name != hashlib.sha256(URL.encode()).hexdigest()[:16] + ".git"  # the layout before
    assert path("https://git.example.com/org/other.git") != anonymous
    assert path("https://alice@git.example.com/org/apps.git") == anonymous  # a user without a token sends nothing


def test_credentials_get_their_own_mirror_and_equal_ones_share_it():
    a = path(URL, source.Credentials(token=TOKEN))
    assert a != path(URL)
    assert a == path(URL, source.Credentials(token=TOKEN))
    assert a == path(f"https://git:{TOKEN}@git.example.com/org/apps.git")  # the same, written into the URL
    assert a != path(URL, source.Credentials(token=TOKEN + "x"))
    assert a != path(URL, source.Credentials(token=TOKEN, username="alice"))
    assert a != path(f"https://git:{TOKEN}x@git.example.com/org/apps.git")
    assert a.parent == path(URL).parent and a.name.endswith(".git") and not a.name.startswith(".")


def test_no_secret_or_digest_of_one_is_in_the_path():
    name = path(URL, source.Credentials(token=TOKEN)).name
    assert TOKEN not in name
    for digest in (hashlib.sha256(TOKEN.encode()).hexdigest(), hashlib.sha256(f"git:{TOKEN}".encode()).hexdigest()):
        assert digest[:16] not in name
    assert len(name) == len("0123456789abcdef-0123456789abcdef.git")


def test_the_key_is_salted_with_the_url():
    creds = source.Credentials(token=TOKEN)
    a, b = path(URL, creds).name, path("https://git.example.com/org/other.git", creds).name
    assert a.split("-")[1] != b.split("-")[1]


def test_ssh_keys_and_known_hosts_count_by_content(tmp_path):
    key_a, key_b = key_file(tmp_path, "a", "KEY A"), key_file(tmp_path, "b", "KEY B")
    copy_of_a = key_file(tmp_path, "a2", "KEY A")
    known, other_known = key_file(tmp_path, "kh", "host A"), key_file(tmp_path, "kh2", "host B")
    a = path(SSH, source.Credentials(ssh_key_file=key_a, known_hosts_file=known))
    assert a != path(SSH)
    assert a == path(SSH, source.Credentials(ssh_key_file=copy_of_a, known_hosts_file=known))
    assert a != path(SSH, source.Credentials(ssh_key_file=key_b, known_hosts_file=known))
    assert a != path(SSH, source.Credentials(ssh_key_file=key_a, known_hosts_file=other_known))
    assert a != path(SSH, source.Credentials(ssh_key_file=key_a))
    assert path(SSH, source.Credentials(known_hosts_file=known)) not in (a, path(SSH))
    (tmp_path / "a").write_text("KEY A, rotated")  # the same path, another key: another mirror
    assert path(SSH, source.Credentials(ssh_key_file=key_a, known_hosts_file=known)) != a
    missing = str(tmp_path / "missing")  # unreadable: its path counts, nothing raises
    assert path(SSH, source.Credentials(ssh_key_file=missing)) not in (path(SSH), a)
    assert "KEY" not in a.name and "key" not in a.name


def test_only_what_the_transport_sends_counts(tmp_path):
    key = key_file(tmp_path, "k", "KEY")
    both = source.Credentials(token=TOKEN, ssh_key_file=key)
    assert path(URL, both) == path(URL, source.Credentials(token=TOKEN))  # HTTPS sends no SSH key
    assert path(URL, source.Credentials(ssh_key_file=key)) == path(URL)
    assert path(SSH, both) == path(SSH, source.Credentials(ssh_key_file=key))  # SSH sends no token
    assert path(SSH, source.Credentials(token=TOKEN)) == path(SSH)
    for url in ("/srv/apps.git", "file:///srv/apps.git", "git://h/apps.git"):
        assert path(url, both) == path(url) and path(url).name.endswith("-anon.git"), url
    helper = "ext::ssh h git-upload-pack apps"  # another transport: everything counts
    assert len({path(helper), path(helper, source.Credentials(token=TOKEN)), path(helper, both)}) == 3


def test_submodule_credentials_key_their_mirror():
    """A submodule on another host gets no credentials (submodules.credentials_for), so the
    anonymous mirror; one on the main repository's host the main repository's."""
    from agent.source import submodules

    creds = source.Credentials(token=TOKEN)
    same, other = "https://git.example.com/org/b.git", "https://elsewhere.example.com/b.git"
    assert path(same, submodules.credentials_for(same, URL, creds)) == path(same, creds) != path(same)
    assert path(other, submodules.credentials_for(other, URL, creds)) == path(other)


def test_reading_without_a_mirror_for_these_credentials_is_a_source_error(tmp_path):
    """An offline pass whose credentials changed (a rotated key) finds no mirror: a SourceError
    naming the URL without its secret, never a traceback."""
    with pytest.raises(source.SourceError, match="has no mirror in the cache") as caught:
        snapshots.read(f"https://git:{TOKEN}@git.example.com/org/apps.git", "a" * 40, tmp_path)
    assert TOKEN not in str(caught.value) and "git.example.com/org/apps.git" in str(caught.value)
