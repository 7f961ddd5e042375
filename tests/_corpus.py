"""A corpus of varied tool signatures shared by the schema tests."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
from decimal import Decimal
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, Field
from typing_extensions import TypedDict


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Address(BaseModel):
    street: str
    city: str = Field(description="City name")
    zip: str | None = None


class Person(BaseModel):
    name: str
    age: int = Field(ge=0, le=150)
    address: Address
    friends: list[Person] = []


@dataclasses.dataclass
class Point:
    x: float
    y: float
    label: str = ""


class Movie(TypedDict):
    title: str
    year: int


class Node(BaseModel):
    value: int
    children: list[Node] = []


def f01(a: int, b: int) -> int:
    return a + b


def f02(city: str, unit: Literal["c", "f"] = "c") -> str:
    return city


def f03(x: float, y: float | None = None) -> float:
    return x


def f04(flag: bool = False) -> bool:
    return flag


def f05(items: list[str]) -> int:
    return len(items)


def f06(items: list[int] | None = None) -> int:
    return 0


def f07(mapping: dict[str, int]) -> int:
    return 0


def f08(pair: tuple[int, str]) -> str:
    return ""


def f09(values: set[str]) -> int:
    return 0


def f10(color: Color) -> str:
    return color.value


def f11(level: Level = Level.LOW) -> int:
    return int(level)


def f12(person: Person) -> str:
    return person.name


def f13(point: Point) -> float:
    return point.x


def f14(movie: Movie) -> str:
    return movie["title"]


def f15(value: int | str) -> str:
    return str(value)


def f16(value: Union[int, str, None] = None) -> str:  # noqa: UP007
    return str(value)


def f17(value: Optional[str] = None) -> str:  # noqa: UP045
    return value or ""


def f18(n: Annotated[int, Field(ge=1, le=10, description="How many")]) -> int:
    return n


def f19(code: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]) -> str:
    return code


def f20(tree: Node) -> int:
    return tree.value


def f21(when: dt.datetime) -> str:
    return when.isoformat()


def f22(day: dt.date) -> str:
    return day.isoformat()


def f23(amount: Decimal) -> str:
    return str(amount)


def f24(anything: Any) -> Any:
    return anything


def f25(nested: list[list[int]]) -> int:
    return 0


def f26(people: list[Person]) -> int:
    return len(people)


def f27(opt_person: Person | None = None) -> str:
    return ""


def f28(choice: Literal[1, 2, 3]) -> int:
    return choice


def f29(mixed: Literal["a", 1]) -> str:
    return str(mixed)


def f30(matrix: dict[str, list[float]]) -> int:
    return 0


def f31(a: int, /, b: int) -> int:
    return a + b


def f32(*, key: str, value: str = "") -> str:
    return key


def f33() -> str:
    return "nothing"


def f34(text: str = "héllo — 你好") -> str:
    return text


def f35(limit: int = 10, offset: int = 0, query: str = "") -> list[str]:
    return []


def f36(colors: list[Color]) -> int:
    return len(colors)


def f37(points: dict[str, Point]) -> int:
    return 0


def f38(maybe_list: list[str] | str) -> str:
    return ""


def f39(ratio: Annotated[float, Field(gt=0, lt=1)]) -> float:
    return ratio


def f40(tags: frozenset[str] = frozenset()) -> int:
    return 0


def f41(data: dict[str, Any]) -> int:
    return 0


def f42(raw: bytes) -> int:
    return len(raw)


def f43(moment: dt.time | None = None) -> str:
    return ""


def f44(span: dt.timedelta) -> float:
    return span.total_seconds()


def f45(x: Annotated[int, "a plain annotation"]) -> int:
    return x


def f46(kind: Literal["only"]) -> str:
    return kind


def f47(addr: Address, people: list[Person] | None = None) -> str:
    return addr.city


def f48(deep: dict[str, dict[str, list[Point]]]) -> int:
    return 0


def f49(enum_or_none: Color | None = None) -> str:
    return ""


def f50(title: str, name: str, model_config: str = "x") -> str:
    """Parameter names that shadow pydantic attributes must still work."""
    return title + name + model_config


def f51(json: str, schema: str = "", copy: bool = False) -> str:
    return json + schema


CORPUS = [v for k, v in sorted(globals().items()) if k.startswith("f") and k[1:].isdigit()]
