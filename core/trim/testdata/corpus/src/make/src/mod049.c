#include <stdio.h>

int mod049(int x)
{
    return x + 49;
}
