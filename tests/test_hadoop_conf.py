"""Hadoop client configuration read by Hadoop's rules, on planted configuration directories."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweeper.launch.hosts.hadoop_conf import HadoopConfError, read_hadoop_conf
from tests.support.hadoop_sites import site


def test_only_the_hostname_gives_every_address(tmp_path: Path) -> None:
    conf = read_hadoop_conf(site(tmp_path, "yarn-site.xml", {"yarn.resourcemanager.hostname": "rm.lan"}), {})
    assert conf.resource_manager_urls() == ["http://rm.lan:8088"]
    assert conf.get("yarn.resourcemanager.address") == "rm.lan:8032"
    assert conf.problems() == []


def test_variables_expand_from_properties_and_the_environment(tmp_path: Path) -> None:
    site(tmp_path, "core-site.xml", {"fs.defaultFS": "hdfs://${env.NN_HOST:-nn.lan}:8020"})
    site(
        tmp_path, "yarn-site.xml",
        {"rm.host": "${env.RM_HOST}", "yarn.resourcemanager.hostname": "${rm.host}",
         "yarn.resourcemanager.webapp.address": "${yarn.resourcemanager.hostname}:18088"},
    )  # fmt: skip
    conf = read_hadoop_conf(tmp_path, {"RM_HOST": "rm1.lan"})
    assert conf.resource_manager_urls() == ["http://rm1.lan:18088"]
    assert conf.default_fs == "hdfs://nn.lan:8020"
    assert read_hadoop_conf(tmp_path, {"RM_HOST": "x", "NN_HOST": "nn2"}).default_fs == "hdfs://nn2:8020"


def test_an_undefined_variable_is_named_not_turned_into_a_url(tmp_path: Path) -> None:
    conf = read_hadoop_conf(site(tmp_path, "yarn-site.xml", {"yarn.resourcemanager.hostname": "${rm.nowhere}"}), {})
    assert conf.resource_manager_urls() == ["http://${rm.nowhere}:8088"]
    assert any("variable nothing defines" in problem for problem in conf.problems())


def test_no_resourcemanager_address_is_a_problem(tmp_path: Path) -> None:
    conf = read_hadoop_conf(site(tmp_path, "yarn-site.xml", {"yarn.nodemanager.aux-services": "x"}), {})
    expected = f"{tmp_path / 'yarn-site.xml'}: no ResourceManager address (set yarn.resourcemanager.hostname)"
    assert conf.problems() == [expected]


def test_ha_gives_one_address_per_rm_id(tmp_path: Path) -> None:
    conf = read_hadoop_conf(
        site(
            tmp_path, "yarn-site.xml",
            {"yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "rm1, rm2",
             "yarn.resourcemanager.hostname.rm1": "a.lan", "yarn.resourcemanager.webapp.address.rm2": "b.lan:9088"},
        ),
        {},
    )  # fmt: skip
    assert conf.resource_manager_urls() == ["http://a.lan:8088", "http://b.lan:9088"]
    assert conf.problems() == []


def test_ha_id_without_an_address_is_named(tmp_path: Path) -> None:
    props = {"yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "rm1,rm2",
             "yarn.resourcemanager.hostname.rm1": "a.lan"}  # fmt: skip
    conf = read_hadoop_conf(site(tmp_path, "yarn-site.xml", props), {})
    with pytest.raises(HadoopConfError, match="rm2"):
        conf.resource_manager_urls()
    assert "rm2" in conf.problems()[0]


def test_https_only_uses_the_https_address(tmp_path: Path) -> None:
    props = {"yarn.resourcemanager.hostname": "rm.lan", "yarn.http.policy": "HTTPS_ONLY"}
    assert read_hadoop_conf(site(tmp_path, "yarn-site.xml", props), {}).resource_manager_urls() == [
        "https://rm.lan:8090"
    ]


def test_deprecated_fs_default_name_is_read(tmp_path: Path) -> None:
    site(tmp_path, "core-site.xml", {"fs.default.name": "hdfs://old.lan:9000"})
    site(tmp_path, "yarn-site.xml", {"yarn.resourcemanager.hostname": "rm.lan"})
    assert read_hadoop_conf(tmp_path, {}).default_fs == "hdfs://old.lan:9000"


def test_final_in_core_site_wins_over_yarn_site(tmp_path: Path) -> None:
    site(tmp_path, "core-site.xml", {"fs.defaultFS": "hdfs://kept:8020"}, final=("fs.defaultFS",))
    site(tmp_path, "yarn-site.xml", {"yarn.resourcemanager.hostname": "rm.lan", "fs.defaultFS": "hdfs://lost:8020"})
    assert read_hadoop_conf(tmp_path, {}).default_fs == "hdfs://kept:8020"


def test_core_site_kept_apart_from_yarn_site_is_found(tmp_path: Path) -> None:
    """YARN_CONF_DIR with yarn-site.xml, HADOOP_CONF_DIR with core-site.xml: both read, neither lost."""
    yarn = site(tmp_path / "yarn", "yarn-site.xml", {"yarn.resourcemanager.hostname": "rm.lan"})
    hadoop = site(tmp_path / "hadoop", "core-site.xml", {"fs.defaultFS": "hdfs://nn.lan:8020"})
    conf = read_hadoop_conf(None, {"YARN_CONF_DIR": str(yarn), "HADOOP_CONF_DIR": str(hadoop)})
    assert conf.default_fs == "hdfs://nn.lan:8020"
    assert conf.conf_dirs == [yarn, hadoop]
    assert conf.client_environment == {"HADOOP_CONF_DIR": str(hadoop), "YARN_CONF_DIR": str(yarn)}


def test_kerberos_is_refused_with_the_reason(tmp_path: Path) -> None:
    site(tmp_path, "core-site.xml", {"hadoop.security.authentication": "Kerberos"})
    site(tmp_path, "yarn-site.xml", {"yarn.resourcemanager.hostname": "rm.lan"})
    conf = read_hadoop_conf(tmp_path, {})
    assert conf.kerberos
    assert any("Kerberos" in problem for problem in conf.problems())


def test_missing_and_broken_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(HadoopConfError, match="HADOOP_CONF_DIR or YARN_CONF_DIR"):
        read_hadoop_conf(None, {"HADOOP_CONF_DIR": str(tmp_path)})
    (tmp_path / "yarn-site.xml").write_text("<configuration><property>")
    with pytest.raises(HadoopConfError, match=r"yarn-site\.xml: cannot be read"):
        read_hadoop_conf(tmp_path, {})
