#include <stdio.h>

int mod117(int x)
{
    return x + 117;
}
